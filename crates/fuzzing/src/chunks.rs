//! Splitting an input into the chunks a socket might deliver it in, deterministically from the
//! input itself (so a corpus file stays plain text and a crash replays exactly).

/// `data` cut into chunks of 1 to 16 bytes, the sizes drawn from a hash of `data` (empty chunks
/// included now and then: a body stream may yield one).
pub fn split(data: &[u8]) -> Vec<&[u8]> {
    let mut state = fnv1a(data) | 1;
    let mut chunks = Vec::new();
    let mut rest = data;
    while !rest.is_empty() {
        state = xorshift(state);
        let size = match state % 8 {
            0 => 0,
            1 | 2 => 1,
            _ => (state >> 8) as usize % 16 + 1,
        };
        let (chunk, tail) = rest.split_at(size.min(rest.len()));
        chunks.push(chunk);
        rest = tail;
    }
    chunks
}

fn fnv1a(data: &[u8]) -> u64 {
    data.iter().fold(0xcbf2_9ce4_8422_2325, |hash, byte| {
        (hash ^ u64::from(*byte)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn xorshift(mut x: u64) -> u64 {
    x ^= x << 13;
    x ^= x >> 7;
    x ^= x << 17;
    x
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_chunks_add_up_to_the_input() {
        let data = b"data: {\"a\":1}\r\n\r\ndata: [DONE]\n\n";
        assert_eq!(split(data).concat(), data);
        assert!(split(data).len() > 1);
        assert!(split(b"").is_empty());
    }
}

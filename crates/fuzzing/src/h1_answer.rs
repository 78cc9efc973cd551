//! An upstream's HTTP/1.1 answer (status line, header fields, a body framed by
//! `Content-Length`, chunks or the connection's end) as the in-task client reads it (the
//! providers' `h1_wire`, which decodes a chunked body in place in its read buffer).
//!
//! Promises: what is read (the status and the body's data, or the error) does not depend on how
//! the bytes were cut into reads; the data is never longer than the input.

use providers::fuzzing::read_h1_answer;

use crate::chunks::split;

pub fn run(data: &[u8]) {
    let whole = read_h1_answer(&[data]);
    let pieces = read_h1_answer(&split(data));
    assert_eq!(whole, pieces, "the answer depends on the chunking");
    if let Ok((_, body)) = &whole {
        assert!(body.len() <= data.len(), "more data than input");
    }
}

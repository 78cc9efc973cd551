//! What the load tools (`agentd-bench`, `agentd-load`) share: reading a process's RSS and CPU
//! time from `/proc`, one open stream read to its end, and error chains.

use std::fmt::Write as _;
use std::time::{Duration, Instant};

use bytes::Bytes;
use reqwest::header::CONTENT_TYPE;

/// `sysconf(_SC_CLK_TCK)` on Linux: the unit of `/proc/PID/stat`'s CPU times.
const CLOCK_TICKS_PER_SECOND: f64 = 100.0;

/// Which process `/proc` is read for.
#[derive(Clone, Copy, Debug)]
pub enum Process {
    /// This process (`/proc/self`).
    Current,
    /// Another process by its id.
    Pid(u32),
}

impl Process {
    fn proc_file(self, name: &str) -> String {
        match self {
            Process::Current => format!("/proc/self/{name}"),
            Process::Pid(pid) => format!("/proc/{pid}/{name}"),
        }
    }

    /// The resident set in bytes, from `/proc/PID/status` (0 where that file does not exist:
    /// the process is gone, or this is not Linux).
    pub fn rss_bytes(self) -> u64 {
        std::fs::read_to_string(self.proc_file("status"))
            .ok()
            .and_then(|status| {
                let line = status.lines().find(|l| l.starts_with("VmRSS:"))?;
                let kb: u64 = line["VmRSS:".len()..]
                    .split_whitespace()
                    .next()?
                    .parse()
                    .ok()?;
                Some(kb * 1024)
            })
            .unwrap_or(0)
    }

    /// Open file descriptors (sockets included), counted in `/proc/PID/fd`; 0 where that
    /// directory cannot be read.
    pub fn open_descriptors(self) -> usize {
        std::fs::read_dir(self.proc_file("fd")).map_or(0, Iterator::count)
    }

    /// User + system CPU time so far (all threads), from `/proc/PID/stat`; zero where that
    /// file does not exist.
    pub fn cpu_time(self) -> Duration {
        std::fs::read_to_string(self.proc_file("stat"))
            .ok()
            .and_then(|stat| stat_cpu_ticks(&stat))
            .map_or(Duration::ZERO, |ticks| {
                Duration::from_secs_f64(ticks as f64 / CLOCK_TICKS_PER_SECOND)
            })
    }
}

/// `utime + stime` (fields 14 and 15) of a `/proc/PID/stat` line. The fields after the
/// parenthesized command name (which may contain spaces) start at field 3.
pub fn stat_cpu_ticks(stat: &str) -> Option<u64> {
    let (_, rest) = stat.rsplit_once(')')?;
    let mut fields = rest.split_whitespace().skip(14 - 3);
    let utime: u64 = fields.next()?.parse().ok()?;
    let stime: u64 = fields.next()?.parse().ok()?;
    Some(utime + stime)
}

/// Bytes as MiB, for reports.
pub fn mib(bytes: u64) -> f64 {
    bytes as f64 / (1024.0 * 1024.0)
}

/// An error with its sources (reqwest's own message hides the interesting part).
pub fn error_chain(error: &dyn std::error::Error) -> String {
    let mut message = error.to_string();
    let mut source = error.source();
    while let Some(cause) = source {
        let _ = write!(message, ": {cause}");
        source = cause.source();
    }
    message
}

/// The last SSE frame of a body.
pub fn last_frame(text: &str) -> &str {
    let trimmed = text.trim_end();
    &trimmed[trimmed.rfind("data:").unwrap_or(0)..]
}

/// The JSON string right after the first `key` (`"status":`) in `text`, without parsing the
/// document (cheap on purpose: the client's CPU counts in the figures).
pub fn json_string_after<'a>(text: &'a str, key: &str) -> Option<&'a str> {
    let rest = text[text.find(key)? + key.len()..].strip_prefix('"')?;
    Some(&rest[..rest.find('"')?])
}

/// How one of many open streams went.
#[derive(Debug)]
pub struct StreamOutcome {
    /// From the start of the wave to the stream's first body bytes (`response.created`).
    pub first_bytes: Duration,
    pub error: Option<String>,
}

/// One of many open streams: `POST url` with the JSON `body`, read to the end keeping only
/// the tail (the bodies of thousands of streams would otherwise be most of the memory
/// measured); an error unless its last event is `response.completed`.
pub async fn one_stream(
    client: &reqwest::Client,
    url: &str,
    body: Bytes,
    started: Instant,
) -> StreamOutcome {
    let mut first_bytes = None;
    let result = async {
        let mut response = client
            .post(url)
            .header(CONTENT_TYPE, "application/json")
            .body(body)
            .send()
            .await
            .map_err(|e| error_chain(&e))?;
        if !response.status().is_success() {
            return Err(format!("HTTP {}", response.status()));
        }
        let mut tail: Vec<u8> = Vec::new();
        while let Some(chunk) = response.chunk().await.map_err(|e| error_chain(&e))? {
            first_bytes.get_or_insert_with(|| started.elapsed());
            tail.extend_from_slice(&chunk);
            if tail.len() > 16 * 1024 {
                tail.drain(..tail.len() - 8 * 1024);
            }
        }
        let text = String::from_utf8_lossy(&tail);
        match json_string_after(last_frame(&text), "\"type\":") {
            Some("response.completed") => Ok(()),
            other => Err(format!("last event {}", other.unwrap_or("?"))),
        }
    }
    .await;
    StreamOutcome {
        first_bytes: first_bytes.unwrap_or_else(|| started.elapsed()),
        error: result.err(),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn answers_are_checked_without_parsing() {
        let body = r#"{"id":"resp_1","status":"failed","output":[{"status":"completed"}]}"#;
        assert_eq!(json_string_after(body, "\"status\":"), Some("failed"));
        let stream =
            "data: {\"type\":\"response.created\"}\n\ndata: {\"type\":\"response.completed\"}\n\n";
        assert_eq!(
            json_string_after(last_frame(stream), "\"type\":"),
            Some("response.completed")
        );
        assert_eq!(json_string_after("{}", "\"type\":"), None);
    }

    #[test]
    fn cpu_ticks_are_utime_plus_stime() {
        let stat = "4242 (agentd bench) S 1 4242 4242 0 -1 4194560 1234 0 0 0 250 31 0 0 20 0 4 0";
        assert_eq!(stat_cpu_ticks(stat), Some(281));
        assert_eq!(stat_cpu_ticks("4242 (x) S 1"), None);
        assert!(
            stat_cpu_ticks(&std::fs::read_to_string("/proc/self/stat").unwrap_or_default())
                .is_some()
                || !cfg!(target_os = "linux")
        );
    }
}

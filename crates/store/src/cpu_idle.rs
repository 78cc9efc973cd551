//! How much of the machine's CPU time went idle lately (Linux: the first line of `/proc/stat`):
//! the checkpointer runs its periodic checkpoints in the idle scheduling class only while the
//! machine has idle time to give them (`checkpoint.rs`).

use std::path::PathBuf;

/// Reads the machine's CPU times and tells the idle share between two reads.
#[derive(Debug)]
pub(crate) struct IdleMeter {
    source: PathBuf,
    /// Idle and total time at the last read.
    last: Option<Times>,
}

/// Jiffies spent idle and in all.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
struct Times {
    idle: u64,
    total: u64,
}

impl IdleMeter {
    /// A meter of this machine (`/proc/stat`).
    pub(crate) fn new() -> IdleMeter {
        IdleMeter::reading(PathBuf::from("/proc/stat"))
    }

    fn reading(source: PathBuf) -> IdleMeter {
        IdleMeter { source, last: None }
    }

    /// The share (0 to 1) of the CPU time since the last call that was idle; `None` on the
    /// first call, when no time passed, and where the times cannot be read.
    pub(crate) fn idle_share(&mut self) -> Option<f64> {
        let now = std::fs::read_to_string(&self.source)
            .ok()
            .and_then(|text| parse(&text));
        let last = std::mem::replace(&mut self.last, now);
        let (last, now) = (last?, now?);
        let total = now.total.checked_sub(last.total).filter(|&t| t > 0)?;
        let idle = now.idle.saturating_sub(last.idle).min(total);
        Some(idle as f64 / total as f64)
    }
}

/// The idle (idle and I/O wait) and total times of `/proc/stat`'s `cpu` line: user, nice,
/// system, idle, iowait, irq, softirq, steal (guest time is counted in user time already).
fn parse(text: &str) -> Option<Times> {
    let line = text.lines().next()?;
    let mut fields = line.split_ascii_whitespace();
    if fields.next()? != "cpu" {
        return None;
    }
    let values: Vec<u64> = fields
        .take(8)
        .map(str::parse)
        .collect::<Result<_, _>>()
        .ok()?;
    let [user, nice, system, idle, iowait, irq, softirq, steal] = values[..] else {
        return None;
    };
    Some(Times {
        idle: idle + iowait,
        total: user + nice + system + idle + iowait + irq + softirq + steal,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_line_gives_idle_and_total_times() {
        let text = "cpu  479707 45 127208 399872 5322 0 33137 343 7 0\ncpu0 1 2 3 4 5 6 7 8 0 0\n";
        assert_eq!(
            parse(text),
            Some(Times {
                idle: 399_872 + 5_322,
                total: 479_707 + 45 + 127_208 + 399_872 + 5_322 + 33_137 + 343,
            })
        );
        assert_eq!(parse("cpu0 1 2 3 4 5 6 7 8\n"), None);
        assert_eq!(parse("cpu 1 2 3\n"), None);
        assert_eq!(parse("cpu 1 2 x 4 5 6 7 8\n"), None);
        assert_eq!(parse(""), None);
    }

    #[test]
    fn the_idle_share_is_that_of_the_time_between_two_reads() {
        let dir = tempfile::tempdir().unwrap();
        let source = dir.path().join("stat");
        let mut meter = IdleMeter::reading(source.clone());
        assert_eq!(meter.idle_share(), None, "nothing to read");
        std::fs::write(&source, "cpu 100 0 100 800 0 0 0 0 0 0\n").unwrap();
        assert_eq!(meter.idle_share(), None, "a first read");
        // 200 jiffies more, 50 of them idle.
        std::fs::write(&source, "cpu 200 0 150 840 10 0 0 0 0 0\n").unwrap();
        assert_eq!(meter.idle_share(), Some(0.25));
        assert_eq!(meter.idle_share(), None, "no time passed");
        std::fs::write(&source, "cpu 200 0 150 940 10 0 0 0 0 0\n").unwrap();
        assert_eq!(meter.idle_share(), Some(1.0));
        std::fs::remove_file(&source).unwrap();
        assert_eq!(meter.idle_share(), None, "unreadable");
    }

    #[test]
    fn this_machine_has_a_share() {
        if cfg!(target_os = "linux") {
            let mut meter = IdleMeter::new();
            meter.idle_share();
            std::thread::sleep(std::time::Duration::from_millis(50));
            let share = meter.idle_share();
            assert!(
                matches!(share, Some(s) if (0.0..=1.0).contains(&s)),
                "{share:?}"
            );
        }
    }
}

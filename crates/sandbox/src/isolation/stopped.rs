//! Noticing a run that can never finish because its processes are stopped.
//!
//! Code in the sandbox can stop itself (`kill -STOP $$`), stop every other process of the run
//! (`kill -STOP -1`), or freeze a process under a tracer. A stopped process only goes on when
//! another one sends it `SIGCONT`; when every process of the run is stopped, no one is left to
//! do that, and the run would wait for its time limit. The same holds when the sandbox's init
//! (bwrap's reaper, pid 1 of the run's pid namespace) is stopped: it could no longer reap the
//! program or end the sandbox. The kernel ignores `SIGSTOP` sent to pid 1 from inside its
//! namespace, but a tracer or a process outside could still stop it.
//!
//! [`watch`] looks at the run's processes from the host's `/proc`, starting at the init's pid
//! (bwrap's `child-pid` status record) and following `/proc/<pid>/task/<tid>/children`. It
//! reports a stop only when it sees the same state on two looks in a row, so a process that
//! is stopped and continued by another one is left alone.

use std::time::Duration;

/// How often the run's processes are looked at.
const INTERVAL: Duration = Duration::from_millis(200);

/// The most processes one look reads (a run has at most `max_processes`; this bounds the
/// walk of a run that forks faster than it can be read).
const MAX_PROCESSES: usize = 8192;

/// Why a run cannot go on.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub(crate) enum Stopped {
    /// The sandbox's init process is stopped.
    Init,
    /// Every process of the program is stopped.
    Everything,
}

impl Stopped {
    /// The note the run's stderr ends with.
    pub(crate) fn note(self) -> &'static str {
        match self {
            Stopped::Init => {
                "[killed: the sandbox's init process was stopped (SIGSTOP or a tracer), so the \
                 run could not finish]"
            }
            Stopped::Everything => {
                "[killed: every process of the run was stopped (SIGSTOP or a tracer), so \
                 nothing was left to continue them and the run could never finish]"
            }
        }
    }
}

/// Returns once the run whose init has host pid `init` cannot go on; never returns while it
/// can (the caller selects it against the run's end).
pub(crate) async fn watch(init: u32) -> Stopped {
    let mut previous = None;
    loop {
        tokio::time::sleep(INTERVAL).await;
        let seen = tokio::task::spawn_blocking(move || look(init))
            .await
            .ok()
            .flatten();
        if let Some(stopped) = seen
            && previous == Some(stopped)
        {
            return stopped;
        }
        previous = seen;
    }
}

/// One look at the run's processes.
fn look(init: u32) -> Option<Stopped> {
    if is_stopped(state(init)?) {
        return Some(Stopped::Init);
    }
    let mut pending = children(init);
    let mut live = 0usize;
    let mut seen = 0usize;
    while let Some(pid) = pending.pop() {
        seen += 1;
        if seen > MAX_PROCESSES {
            return None;
        }
        let Some(state) = state(pid) else {
            continue;
        };
        match state {
            // Gone, or a zombie waiting to be reaped: not a process that could run.
            'Z' | 'X' | 'x' => {}
            state if is_stopped(state) => live += 1,
            // Something still runs (or sleeps, and so can wake up).
            _ => return None,
        }
        pending.extend(children(pid));
    }
    (live > 0).then_some(Stopped::Everything)
}

/// `T` (stopped by a signal) or `t` (stopped by a tracer).
fn is_stopped(state: char) -> bool {
    matches!(state, 'T' | 't')
}

/// The state letter of `/proc/<pid>/stat` (the field after the command name, which may
/// itself hold spaces and parentheses).
fn state(pid: u32) -> Option<char> {
    let stat = std::fs::read_to_string(format!("/proc/{pid}/stat")).ok()?;
    parse_state(&stat)
}

fn parse_state(stat: &str) -> Option<char> {
    let (_, rest) = stat.rsplit_once(')')?;
    rest.trim_start().chars().next()
}

/// The children of every thread of `pid`.
fn children(pid: u32) -> Vec<u32> {
    let Ok(tasks) = std::fs::read_dir(format!("/proc/{pid}/task")) else {
        return Vec::new();
    };
    let mut found = Vec::new();
    for task in tasks.filter_map(Result::ok) {
        if let Ok(text) = std::fs::read_to_string(task.path().join("children")) {
            found.extend(
                text.split_whitespace()
                    .filter_map(|pid| pid.parse::<u32>().ok()),
            );
        }
    }
    found
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_state_follows_the_command_name() {
        assert_eq!(parse_state("12 (bash) S 1 12 12 0"), Some('S'));
        assert_eq!(parse_state("12 (a) b) (c) T 1 12"), Some('T'));
        assert_eq!(parse_state("garbage"), None);
    }

    #[test]
    fn this_process_is_running_and_not_stopped() {
        let me = std::process::id();
        assert!(state(me).is_some_and(|state| !is_stopped(state)));
        assert_eq!(look(me), None);
    }
}

//! Memory and process-count limits through a cgroup per run.
//!
//! Each run gets a fresh cgroup (`sandbox-<pid>-<n>`) with the memory and pids limits; the
//! launcher writes its own pid into the cgroup's `cgroup.procs` before it `exec`s into
//! `prlimit`/`bwrap`, so every process of the run is born inside it. After the run the
//! cgroup says whether the kernel OOM-killed something, and is removed.
//!
//! - cgroup v2 (production hosts): the runs' cgroups are children of this process's own
//!   cgroup, which must be delegated to us (writable; systemd `Delegate=yes`, or root in a
//!   container with its own cgroup namespace). v2 forbids processes in a cgroup that hands
//!   controllers to its children, so when our cgroup holds processes, this process first
//!   moves itself into a leaf child `agentd` (the usual container-init move).
//! - cgroup v1 (this development machine): the `memory` and `pids` hierarchies are separate
//!   mounts; the runs' cgroups go under `agentd-sandbox` below our own cgroup in each.
//!
//! When neither works, [`Cgroups::detect`] says why and the caller falls back to rlimits.

use std::io;
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicU64, Ordering};
use std::time::Duration;

/// The name of the directory (v1) under which runs' cgroups are created.
const V1_PARENT: &str = "agentd-sandbox";
/// The leaf (v2) this process moves itself into when its cgroup holds processes.
const V2_SELF_LEAF: &str = "agentd";

/// Where the per-run cgroups are created.
#[derive(Debug, Clone, PartialEq, Eq)]
pub(crate) enum Cgroups {
    /// One unified hierarchy: runs go under `parent`, whose `cgroup.subtree_control`
    /// enables `memory` and `pids`.
    V2 { parent: PathBuf },
    /// Separate hierarchies; a controller that is not available is `None` (its limit then
    /// falls back to an rlimit).
    V1 {
        memory: Option<PathBuf>,
        pids: Option<PathBuf>,
    },
}

impl Cgroups {
    /// Finds a hierarchy this process may create cgroups in, sets it up and checks that a
    /// cgroup with limits can be created and removed. `Err` says why not.
    pub(crate) fn detect() -> Result<Cgroups, String> {
        let mountinfo = std::fs::read_to_string("/proc/self/mountinfo")
            .map_err(|err| format!("cannot read /proc/self/mountinfo: {err}"))?;
        let own = std::fs::read_to_string("/proc/self/cgroup")
            .map_err(|err| format!("cannot read /proc/self/cgroup: {err}"))?;
        let mounts = parse_mountinfo(&mountinfo);
        let memberships = parse_proc_cgroup(&own);

        let mut reasons = Vec::new();
        match v2_candidate(&mounts, &memberships) {
            Some(dir) => match setup_v2(&dir) {
                Ok(cgroups) => return Ok(cgroups),
                Err(err) => reasons.push(format!("cgroup v2 at {}: {err}", dir.display())),
            },
            None => {
                reasons.push("no cgroup v2 hierarchy with the memory and pids controllers".into())
            }
        }
        let memory = v1_dir(&mounts, &memberships, "memory").map(|dir| dir.join(V1_PARENT));
        let pids = v1_dir(&mounts, &memberships, "pids").map(|dir| dir.join(V1_PARENT));
        if memory.is_none() && pids.is_none() {
            reasons.push("no cgroup v1 memory or pids hierarchy".into());
            return Err(reasons.join("; "));
        }
        let memory = memory.and_then(|dir| match setup_v1_parent(&dir) {
            Ok(()) => Some(dir),
            Err(err) => {
                reasons.push(format!("cgroup v1 memory at {}: {err}", dir.display()));
                None
            }
        });
        let pids = pids.and_then(|dir| match setup_v1_parent(&dir) {
            Ok(()) => Some(dir),
            Err(err) => {
                reasons.push(format!("cgroup v1 pids at {}: {err}", dir.display()));
                None
            }
        });
        if memory.is_none() && pids.is_none() {
            return Err(reasons.join("; "));
        }
        let cgroups = Cgroups::V1 { memory, pids };
        // A trial run's cgroup proves the limits can be written.
        cgroups
            .create_run(64 << 20, 16)
            .map_err(|err| format!("cannot create a cgroup with limits: {err}"))?;
        Ok(cgroups)
    }

    /// Whether memory is limited by the cgroup (else the caller uses RLIMIT_AS).
    pub(crate) fn limits_memory(&self) -> bool {
        match self {
            Cgroups::V2 { .. } => true,
            Cgroups::V1 { memory, .. } => memory.is_some(),
        }
    }

    /// Whether the process count is limited by the cgroup (else the caller uses RLIMIT_NPROC).
    pub(crate) fn limits_pids(&self) -> bool {
        match self {
            Cgroups::V2 { .. } => true,
            Cgroups::V1 { pids, .. } => pids.is_some(),
        }
    }

    /// A short description for the start-up log.
    pub(crate) fn describe(&self) -> String {
        match self {
            Cgroups::V2 { parent } => format!("cgroup v2 under {}", parent.display()),
            Cgroups::V1 { memory, pids } => {
                let mut parts = Vec::new();
                if let Some(dir) = memory {
                    parts.push(format!("memory under {}", dir.display()));
                }
                if let Some(dir) = pids {
                    parts.push(format!("pids under {}", dir.display()));
                }
                format!("cgroup v1 ({})", parts.join(", "))
            }
        }
    }

    /// Creates the cgroup(s) of one run with its limits.
    pub(crate) fn create_run(
        &self,
        memory_bytes: u64,
        max_processes: u32,
    ) -> io::Result<RunCgroup> {
        let name = run_name();
        let mut run = RunCgroup {
            dirs: Vec::new(),
            memory: None,
            v2: matches!(self, Cgroups::V2 { .. }),
        };
        match self {
            Cgroups::V2 { parent } => {
                let dir = parent.join(&name);
                create_dir(&dir)?;
                run.dirs.push(dir.clone());
                run.memory = Some(dir.clone());
                let limits = write(&dir.join("memory.max"), &memory_bytes.to_string())
                    .and_then(|()| write(&dir.join("pids.max"), &max_processes.to_string()));
                if let Err(err) = limits {
                    run.remove_now();
                    return Err(err);
                }
                // No swapping around the memory limit (absent when swap accounting is off).
                let swap = dir.join("memory.swap.max");
                if swap.exists() {
                    let _ = write(&swap, "0");
                }
            }
            Cgroups::V1 { memory, pids } => {
                if let Some(parent) = memory {
                    let dir = parent.join(&name);
                    create_dir(&dir)?;
                    run.dirs.push(dir.clone());
                    run.memory = Some(dir.clone());
                    if let Err(err) = write(
                        &dir.join("memory.limit_in_bytes"),
                        &memory_bytes.to_string(),
                    ) {
                        run.remove_now();
                        return Err(err);
                    }
                    // Memory plus swap, when swap accounting is on (must not be below the
                    // memory limit, hence written second).
                    let memsw = dir.join("memory.memsw.limit_in_bytes");
                    if memsw.exists() {
                        let _ = write(&memsw, &memory_bytes.to_string());
                    }
                }
                if let Some(parent) = pids {
                    let dir = parent.join(&name);
                    if let Err(err) = create_dir(&dir) {
                        run.remove_now();
                        return Err(err);
                    }
                    run.dirs.push(dir.clone());
                    if let Err(err) = write(&dir.join("pids.max"), &max_processes.to_string()) {
                        run.remove_now();
                        return Err(err);
                    }
                }
            }
        }
        Ok(run)
    }
}

/// The cgroup(s) of one run. Dropped without [`RunCgroup::remove`] (a run whose future was
/// dropped), it tries once to remove them.
#[derive(Debug)]
pub(crate) struct RunCgroup {
    /// Every directory created for the run (one per hierarchy).
    dirs: Vec<PathBuf>,
    /// The directory that carries the memory limit, to read its OOM-kill count.
    memory: Option<PathBuf>,
    v2: bool,
}

impl RunCgroup {
    /// The `cgroup.procs` files the launcher writes its pid into.
    pub(crate) fn procs_files(&self) -> Vec<PathBuf> {
        self.dirs
            .iter()
            .map(|dir| dir.join("cgroup.procs"))
            .collect()
    }

    /// Whether the kernel OOM-killed a process of the run.
    pub(crate) fn oom_killed(&self) -> bool {
        let Some(dir) = &self.memory else {
            return false;
        };
        let file = if self.v2 {
            dir.join("memory.events")
        } else {
            dir.join("memory.oom_control")
        };
        std::fs::read_to_string(file)
            .ok()
            .and_then(|text| counter(&text, "oom_kill"))
            .is_some_and(|count| count > 0)
    }

    /// Kills whatever is left in the cgroup (v2 `cgroup.kill`; in v1 the run's pid namespace
    /// already took everything down with it).
    pub(crate) fn kill_all(&self) {
        if self.v2 {
            for dir in &self.dirs {
                let file = dir.join("cgroup.kill");
                if file.exists() {
                    let _ = write(&file, "1");
                }
            }
        }
    }

    /// Removes the cgroup(s), waiting briefly for killed processes to leave them.
    pub(crate) async fn remove(mut self) {
        for dir in std::mem::take(&mut self.dirs) {
            let mut attempt = 0;
            loop {
                match std::fs::remove_dir(&dir) {
                    Ok(()) => break,
                    Err(err) if err.kind() == io::ErrorKind::NotFound => break,
                    Err(err) => {
                        attempt += 1;
                        if attempt >= 40 {
                            tracing::warn!(cgroup = %dir.display(), error = %err, "could not remove a sandbox cgroup");
                            break;
                        }
                        tokio::time::sleep(Duration::from_millis(25)).await;
                    }
                }
            }
        }
    }

    /// Removes the cgroup(s) once, without waiting (for cgroups no process ever joined).
    fn remove_now(&mut self) {
        for dir in std::mem::take(&mut self.dirs) {
            let _ = std::fs::remove_dir(dir);
        }
    }
}

impl Drop for RunCgroup {
    fn drop(&mut self) {
        self.remove_now();
    }
}

/// One line of `/proc/self/mountinfo` that matters here.
#[derive(Debug, Clone, PartialEq, Eq)]
struct Mount {
    /// The path inside the hierarchy that is mounted (`/` unless the mount is a subtree).
    root: String,
    mount_point: PathBuf,
    /// `cgroup` or `cgroup2`.
    fs_type: String,
    /// The super-block options (the v1 controllers: `rw,memory`).
    options: Vec<String>,
}

fn parse_mountinfo(text: &str) -> Vec<Mount> {
    text.lines()
        .filter_map(|line| {
            let (before, after) = line.split_once(" - ")?;
            let fields: Vec<&str> = before.split(' ').collect();
            let mut after = after.split(' ');
            let fs_type = after.next()?;
            let _source = after.next()?;
            let options = after.next().unwrap_or_default();
            if fs_type != "cgroup" && fs_type != "cgroup2" {
                return None;
            }
            Some(Mount {
                root: unescape(fields.get(3)?),
                mount_point: PathBuf::from(unescape(fields.get(4)?)),
                fs_type: fs_type.to_owned(),
                options: options.split(',').map(str::to_owned).collect(),
            })
        })
        .collect()
}

/// mountinfo escapes space, tab, newline and backslash as `\ooo`.
fn unescape(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        if bytes[i] == b'\\'
            && let Some(digits) = bytes.get(i + 1..i + 4)
            && digits.iter().all(|digit| (b'0'..=b'7').contains(digit))
        {
            let value = digits
                .iter()
                .fold(0u32, |value, digit| value * 8 + u32::from(digit - b'0'));
            out.push(u8::try_from(value).unwrap_or(b'?'));
            i += 4;
            continue;
        }
        out.push(bytes[i]);
        i += 1;
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// `/proc/self/cgroup`: (controllers, path) per line; v2 is the line `0::/path`.
fn parse_proc_cgroup(text: &str) -> Vec<(Vec<String>, String)> {
    text.lines()
        .filter_map(|line| {
            let mut parts = line.splitn(3, ':');
            let _id = parts.next()?;
            let controllers = parts.next()?;
            let path = parts.next()?;
            let controllers = if controllers.is_empty() {
                Vec::new()
            } else {
                controllers.split(',').map(str::to_owned).collect()
            };
            Some((controllers, path.to_owned()))
        })
        .collect()
}

/// The host directory of our own cgroup in a hierarchy mounted at `mount`.
fn own_dir(mount: &Mount, path: &str) -> Option<PathBuf> {
    let relative = if mount.root == "/" {
        path
    } else {
        // A subtree mount (a container's view): our path must lie below its root.
        let rest = path.strip_prefix(mount.root.as_str())?;
        if !(rest.is_empty() || rest.starts_with('/')) {
            return None;
        }
        rest
    };
    let relative = relative.trim_start_matches('/');
    if relative.split('/').any(|part| part == "..") {
        return None;
    }
    Some(if relative.is_empty() {
        mount.mount_point.clone()
    } else {
        mount.mount_point.join(relative)
    })
}

/// Our own cgroup in the v2 hierarchy, when it offers both controllers.
fn v2_candidate(mounts: &[Mount], memberships: &[(Vec<String>, String)]) -> Option<PathBuf> {
    let mount = mounts.iter().find(|mount| mount.fs_type == "cgroup2")?;
    let (_, path) = memberships
        .iter()
        .find(|(controllers, _)| controllers.is_empty())?;
    let dir = own_dir(mount, path)?;
    let controllers = std::fs::read_to_string(dir.join("cgroup.controllers")).ok()?;
    let available: Vec<&str> = controllers.split_whitespace().collect();
    (available.contains(&"memory") && available.contains(&"pids")).then_some(dir)
}

/// Our own cgroup in the v1 hierarchy of `controller`.
fn v1_dir(
    mounts: &[Mount],
    memberships: &[(Vec<String>, String)],
    controller: &str,
) -> Option<PathBuf> {
    let mount = mounts.iter().find(|mount| {
        mount.fs_type == "cgroup" && mount.options.iter().any(|option| option == controller)
    })?;
    let (_, path) = memberships
        .iter()
        .find(|(controllers, _)| controllers.iter().any(|name| name == controller))?;
    own_dir(mount, path)
}

/// Makes `dir` (our own v2 cgroup) able to hold runs' cgroups with memory and pids limits.
fn setup_v2(dir: &Path) -> Result<Cgroups, String> {
    let enabled = |dir: &Path| {
        std::fs::read_to_string(dir.join("cgroup.subtree_control"))
            .map(|text| {
                let names: Vec<&str> = text.split_whitespace().collect();
                names.contains(&"memory") && names.contains(&"pids")
            })
            .unwrap_or(false)
    };
    if !enabled(dir) {
        let control = dir.join("cgroup.subtree_control");
        if let Err(first) = write(&control, "+memory +pids") {
            // "No internal processes": move this process into a leaf, then try again.
            let leaf = dir.join(V2_SELF_LEAF);
            create_dir(&leaf).map_err(|err| format!("cannot create {}: {err}", leaf.display()))?;
            write(&leaf.join("cgroup.procs"), &std::process::id().to_string()).map_err(|err| {
                format!("cannot enable the memory and pids controllers ({first}) nor move this process into {} ({err})", leaf.display())
            })?;
            tracing::info!(cgroup = %leaf.display(), "moved agentd into a leaf cgroup to delegate memory and pids limits to sandbox runs");
            write(&control, "+memory +pids").map_err(|err| {
                format!("cannot enable the memory and pids controllers (other processes share the cgroup?): {err}")
            })?;
        }
    }
    let cgroups = Cgroups::V2 {
        parent: dir.to_path_buf(),
    };
    // A trial run's cgroup (removed when dropped) proves the limits can be written.
    cgroups
        .create_run(64 << 20, 16)
        .map_err(|err| format!("cannot create a cgroup with limits: {err}"))?;
    Ok(cgroups)
}

fn setup_v1_parent(dir: &Path) -> io::Result<()> {
    create_dir(dir)
}

fn create_dir(dir: &Path) -> io::Result<()> {
    match std::fs::create_dir(dir) {
        Ok(()) => Ok(()),
        Err(err) if err.kind() == io::ErrorKind::AlreadyExists => Ok(()),
        Err(err) => Err(err),
    }
}

/// Writes a cgroup control file (one `write`, as the kernel expects).
fn write(file: &Path, value: &str) -> io::Result<()> {
    std::fs::write(file, value.as_bytes())
}

/// `key N` in a flat-keyed cgroup file.
fn counter(text: &str, key: &str) -> Option<u64> {
    text.lines().find_map(|line| {
        let (name, value) = line.split_once(' ')?;
        (name == key).then(|| value.trim().parse().ok()).flatten()
    })
}

fn run_name() -> String {
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    format!(
        "sandbox-{}-{}",
        std::process::id(),
        COUNTER.fetch_add(1, Ordering::Relaxed)
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
39 31 0:36 / /sys/fs/cgroup/pids rw,relatime - cgroup cgroup rw,pids
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
50 31 0:40 /ctr /mnt/with\\040space rw - cgroup cgroup rw,cpu,cpuacct
";

    #[test]
    fn mountinfo_and_membership_give_our_directories() {
        let mounts = parse_mountinfo(MOUNTINFO);
        assert_eq!(mounts.len(), 4);
        assert_eq!(mounts[3].mount_point, PathBuf::from("/mnt/with space"));
        let memberships =
            parse_proc_cgroup("8:pids:/\n4:memory:/process_api/abc\n2:cpu,cpuacct:/ctr/x\n0::/\n");
        assert_eq!(
            v1_dir(&mounts, &memberships, "memory"),
            Some(PathBuf::from("/sys/fs/cgroup/memory/process_api/abc"))
        );
        assert_eq!(
            v1_dir(&mounts, &memberships, "pids"),
            Some(PathBuf::from("/sys/fs/cgroup/pids"))
        );
        assert_eq!(
            v1_dir(&mounts, &memberships, "cpu"),
            Some(PathBuf::from("/mnt/with space/x"))
        );
        assert_eq!(v1_dir(&mounts, &memberships, "blkio"), None);
    }

    #[test]
    fn subtree_mounts_refuse_paths_outside_them() {
        let mount = Mount {
            root: "/ctr".into(),
            mount_point: PathBuf::from("/sys/fs/cgroup"),
            fs_type: "cgroup2".into(),
            options: vec![],
        };
        assert_eq!(
            own_dir(&mount, "/ctr"),
            Some(PathBuf::from("/sys/fs/cgroup"))
        );
        assert_eq!(
            own_dir(&mount, "/ctr/a"),
            Some(PathBuf::from("/sys/fs/cgroup/a"))
        );
        assert_eq!(own_dir(&mount, "/ctrl/a"), None);
        assert_eq!(own_dir(&mount, "/other"), None);
    }

    #[test]
    fn counters_are_read_by_key() {
        let events = "low 0\nhigh 0\nmax 3\noom 1\noom_kill 2\n";
        assert_eq!(counter(events, "oom_kill"), Some(2));
        assert_eq!(counter(events, "oom"), Some(1));
        assert_eq!(
            counter("oom_kill_disable 0\nunder_oom 0\n", "oom_kill"),
            None
        );
    }

    #[test]
    fn v2_runs_get_memory_and_pids_limits() {
        // A plain directory stands in for a delegated cgroup whose controllers are enabled.
        let parent =
            std::env::temp_dir().join(format!("agentd-cgroup-test-{}", std::process::id()));
        std::fs::create_dir_all(&parent).unwrap();
        std::fs::write(parent.join("cgroup.subtree_control"), "memory pids").unwrap();
        let cgroups = setup_v2(&parent);
        // The trial cgroup is a plain directory with files here, so its removal fails and
        // setup still succeeds.
        let cgroups = cgroups.unwrap();
        let run = cgroups.create_run(128 << 20, 32).unwrap();
        let dir = run.dirs[0].clone();
        assert_eq!(
            std::fs::read_to_string(dir.join("memory.max")).unwrap(),
            "134217728"
        );
        assert_eq!(std::fs::read_to_string(dir.join("pids.max")).unwrap(), "32");
        assert_eq!(run.procs_files(), vec![dir.join("cgroup.procs")]);
        std::fs::write(dir.join("memory.events"), "oom 1\noom_kill 1\n").unwrap();
        assert!(run.oom_killed());
        std::fs::remove_dir_all(&parent).unwrap();
    }
}

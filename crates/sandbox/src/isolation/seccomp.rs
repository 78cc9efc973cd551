//! The seccomp filter of every run: the second wall inside bubblewrap.
//!
//! bubblewrap already runs code without capabilities in fresh namespaces, so most of the
//! system calls below fail there anyway. The filter makes them fail without relying on
//! that: a bug in the namespace set-up, a kernel bug reachable only through one of these
//! calls, or a capability left by mistake meets a second, independent wall. It is a deny
//! list (everything else is allowed, so ordinary programs, Python and its packages run
//! unchanged) of calls sandboxed code has no use for and that have a history of kernel
//! exploits or reach outside the run:
//!
//! - mounting and file-system topology: `mount`, `umount2`, `pivot_root`, `chroot`, the new
//!   mount API (`fsopen`, `fsmount`, `move_mount`, `open_tree`, …), `name_to_handle_at` /
//!   `open_by_handle_at` (opening files by handle escapes a bind mount);
//! - namespaces: `unshare`, `setns`, and `clone` with a namespace flag;
//! - other processes: `ptrace`, `process_vm_readv`/`writev`, `kcmp`, `pidfd_getfd`;
//! - kernel attack surface: `bpf`, `perf_event_open`, `userfaultfd`, `io_uring_*` (whose
//!   operations bypass seccomp), `keyctl`/`add_key`/`request_key` (the kernel keyrings);
//! - the machine: module loading, `kexec_*`, `reboot`, `swapon`/`swapoff`, `acct`,
//!   `quotactl`, `syslog`, setting the clock, `iopl`/`ioperm`.
//!
//! A denied call fails with `EPERM`, as it would for an unprivileged process, so programs
//! report an error rather than crash. The filter checks the architecture first (seccompiler
//! kills a process that makes calls of another ABI, such as 32-bit `int 0x80` on x86-64);
//! the x32 numbers of the denied calls are denied too.
//!
//! bubblewrap loads the compiled program (`--seccomp FD`) right before it executes the
//! program, after its own set-up; every process of the run inherits it.

use std::collections::BTreeMap;

use seccompiler::{
    BpfProgram, SeccompAction, SeccompCmpArgLen, SeccompCmpOp, SeccompCondition, SeccompFilter,
    SeccompRule, TargetArch,
};

/// The denied calls on every architecture.
const DENIED: &[i64] = &[
    libc::SYS_mount,
    libc::SYS_umount2,
    libc::SYS_pivot_root,
    libc::SYS_chroot,
    libc::SYS_fsopen,
    libc::SYS_fsconfig,
    libc::SYS_fsmount,
    libc::SYS_fspick,
    libc::SYS_move_mount,
    libc::SYS_open_tree,
    libc::SYS_mount_setattr,
    libc::SYS_name_to_handle_at,
    libc::SYS_open_by_handle_at,
    libc::SYS_unshare,
    libc::SYS_setns,
    libc::SYS_ptrace,
    libc::SYS_process_vm_readv,
    libc::SYS_process_vm_writev,
    libc::SYS_kcmp,
    libc::SYS_pidfd_getfd,
    libc::SYS_bpf,
    libc::SYS_perf_event_open,
    libc::SYS_userfaultfd,
    libc::SYS_io_uring_setup,
    libc::SYS_io_uring_enter,
    libc::SYS_io_uring_register,
    libc::SYS_keyctl,
    libc::SYS_add_key,
    libc::SYS_request_key,
    libc::SYS_init_module,
    libc::SYS_finit_module,
    libc::SYS_delete_module,
    libc::SYS_kexec_load,
    libc::SYS_kexec_file_load,
    libc::SYS_reboot,
    libc::SYS_swapon,
    libc::SYS_swapoff,
    libc::SYS_acct,
    libc::SYS_quotactl,
    libc::SYS_syslog,
    libc::SYS_settimeofday,
    libc::SYS_clock_settime,
    libc::SYS_clock_adjtime,
    libc::SYS_adjtimex,
    libc::SYS_fanotify_init,
];

/// Denied calls that exist on x86-64 only.
#[cfg(target_arch = "x86_64")]
const DENIED_ARCH: &[i64] = &[
    libc::SYS_iopl,
    libc::SYS_ioperm,
    libc::SYS_uselib,
    libc::SYS_lookup_dcookie,
    // The x32 ABI's own numbers of calls denied above (512 and up).
    521, // ptrace
    528, // kexec_load
    539, // process_vm_readv
    540, // process_vm_writev
];
#[cfg(not(target_arch = "x86_64"))]
const DENIED_ARCH: &[i64] = &[];

/// The x32 ABI marks its call numbers with this bit (x86-64 only).
#[cfg(target_arch = "x86_64")]
const X32_BIT: i64 = 0x4000_0000;

/// The namespace flags `clone` must not carry.
const NAMESPACE_FLAGS: &[libc::c_int] = &[
    libc::CLONE_NEWNS,
    libc::CLONE_NEWUSER,
    libc::CLONE_NEWPID,
    libc::CLONE_NEWNET,
    libc::CLONE_NEWIPC,
    libc::CLONE_NEWUTS,
    libc::CLONE_NEWCGROUP,
];

/// The compiled filter in the layout `bwrap --seccomp` reads: the `sock_filter`
/// instructions, 8 bytes each in native byte order. `Err` when this architecture is not
/// supported.
pub(crate) fn program() -> Result<Vec<u8>, String> {
    let arch = TargetArch::try_from(std::env::consts::ARCH)
        .map_err(|err| format!("no seccomp filter for this architecture: {err}"))?;
    let mut rules: BTreeMap<i64, Vec<SeccompRule>> = BTreeMap::new();
    for &call in DENIED.iter().chain(DENIED_ARCH) {
        rules.insert(call, Vec::new());
        #[cfg(target_arch = "x86_64")]
        if call < 512 {
            rules.insert(call | X32_BIT, Vec::new());
        }
    }
    // `clone` with any namespace flag in its first argument (one rule per flag: a chain of
    // rules matches when any of them does). `clone3` passes its flags in memory, where a
    // filter cannot look: it fails with ENOSYS, and C libraries fall back to `clone`.
    let mut clone_rules = Vec::new();
    for &flag in NAMESPACE_FLAGS {
        let flag = u64::try_from(flag).map_err(|err| err.to_string())?;
        let condition = SeccompCondition::new(
            0,
            SeccompCmpArgLen::Qword,
            SeccompCmpOp::MaskedEq(flag),
            flag,
        )
        .map_err(|err| err.to_string())?;
        clone_rules.push(SeccompRule::new(vec![condition]).map_err(|err| err.to_string())?);
    }
    rules.insert(libc::SYS_clone, clone_rules);
    let filter = SeccompFilter::new(
        rules,
        SeccompAction::Allow,
        SeccompAction::Errno(u32::try_from(libc::EPERM).unwrap_or(1)),
        arch,
    )
    .map_err(|err| format!("cannot build the seccomp filter: {err}"))?;
    let mut program: BpfProgram = filter
        .try_into()
        .map_err(|err: seccompiler::BackendError| {
            format!("cannot compile the seccomp filter: {err}")
        })?;
    // `clone3` answers ENOSYS (see above).
    program = with_clone3_enosys(program)?;
    let mut bytes = Vec::with_capacity(program.len() * 8);
    for instruction in program {
        bytes.extend_from_slice(&instruction.code.to_ne_bytes());
        bytes.push(instruction.jt);
        bytes.push(instruction.jf);
        bytes.extend_from_slice(&instruction.k.to_ne_bytes());
    }
    Ok(bytes)
}

/// Inserts, right after seccompiler's architecture check (its first three instructions),
/// `if nr == clone3 { return ERRNO(ENOSYS) }`. The rest of the program is unchanged: its
/// jumps are relative and none crosses the insertion point, and it loads the call number
/// itself.
fn with_clone3_enosys(program: BpfProgram) -> Result<BpfProgram, String> {
    const ARCH_CHECK: usize = 3;
    // seccomp_data: `int nr` first, then `__u32 arch`.
    const NR_OFFSET: u32 = 0;
    // BPF_LD | BPF_W | BPF_ABS, BPF_JMP | BPF_JEQ | BPF_K, BPF_RET | BPF_K.
    const LD_W_ABS: u16 = 0x20;
    const JMP_JEQ_K: u16 = 0x15;
    const RET_K: u16 = 0x06;
    if program.len() < ARCH_CHECK {
        return Err("unexpected seccomp program".to_owned());
    }
    let clone3 = u32::try_from(libc::SYS_clone3).map_err(|err| err.to_string())?;
    let enosys = u32::try_from(libc::ENOSYS).map_err(|err| err.to_string())?;
    let insert = [
        instruction(LD_W_ABS, 0, 0, NR_OFFSET),
        instruction(JMP_JEQ_K, 0, 1, clone3),
        instruction(RET_K, 0, 0, libc::SECCOMP_RET_ERRNO | enosys),
    ];
    let mut out = Vec::with_capacity(program.len() + insert.len());
    out.extend_from_slice(&program[..ARCH_CHECK]);
    out.extend(insert);
    out.extend_from_slice(&program[ARCH_CHECK..]);
    Ok(out)
}

fn instruction(code: u16, jt: u8, jf: u8, k: u32) -> seccompiler::sock_filter {
    seccompiler::sock_filter { code, jt, jf, k }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_program_compiles_to_whole_instructions() {
        let bytes = program().unwrap();
        assert!(!bytes.is_empty());
        assert_eq!(bytes.len() % 8, 0);
        // The kernel takes at most 4096 instructions.
        assert!(bytes.len() / 8 < 4096);
    }
}

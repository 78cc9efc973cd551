//! The Landlock helper: a third wall, applied by a process inside the sandbox to itself
//! before it executes the program (Landlock restricts the calling process and everything
//! it starts, and cannot be set up from outside).
//!
//! bubblewrap runs `<helper> --rw /workspace --rw /tmp --rw /dev [--no-network] -- <program>`
//! instead of the program. The helper is agentd's own binary (`agentd sandbox-exec …`, see
//! [`dispatch`]), bound read-only into the sandbox. It creates a Landlock ruleset (best effort
//! for the running kernel's ABI), restricts itself and executes the program, which then:
//!
//! - may read and execute anything it can see, and write, create, rename or remove only below
//!   the `--rw` directories (the rest is also mounted read-only by bubblewrap: Landlock is the
//!   second, independent wall; it also refuses writes to `/proc`, e.g. `/proc/self/comm`);
//! - with `--no-network`, may neither bind nor connect TCP sockets (ABI 4, Linux 6.7);
//! - may not send signals to, nor reach the abstract UNIX sockets of, processes outside its
//!   domain: bubblewrap's init, which started before the helper (ABI 6, Linux 6.12).
//!
//! The program learns the ABI in force from `AGENTD_SANDBOX_LANDLOCK` (the probe reads it).
//! A helper that cannot enforce Landlock at all exits 126 without running anything.

use std::ffi::{OsStr, OsString};
use std::os::unix::process::CommandExt;
use std::process::Command;

use landlock::{
    ABI, Access, AccessFs, AccessNet, CompatLevel, Compatible, Ruleset, RulesetAttr,
    RulesetCreatedAttr, RulesetStatus, Scope, path_beneath_rules,
};

/// The subcommand of agentd's binary that runs the helper.
pub const SUBCOMMAND: &str = "sandbox-exec";

/// Set for the program: the Landlock ABI in force.
pub const MARKER_ENV: &str = "AGENTD_SANDBOX_LANDLOCK";

/// The ABI this helper asks for (the newest the crate knows; the kernel's own is used when
/// it is older).
const WANTED: ABI = ABI::V6;

/// Runs the helper when this process was started as `<program> sandbox-exec …` (and then
/// never returns); returns at once otherwise. agentd's `main` calls it first.
pub fn dispatch() {
    let mut args = std::env::args_os().skip(1);
    if args.next().as_deref() == Some(OsStr::new(SUBCOMMAND)) {
        std::process::exit(run(args.collect()));
    }
}

/// The helper's arguments.
#[derive(Debug, Default, PartialEq, Eq)]
struct Arguments {
    writable: Vec<OsString>,
    no_network: bool,
    program: Vec<OsString>,
}

fn parse(args: Vec<OsString>) -> Result<Arguments, String> {
    let mut parsed = Arguments::default();
    let mut args = args.into_iter();
    while let Some(arg) = args.next() {
        match arg.to_str() {
            Some("--rw") => parsed
                .writable
                .push(args.next().ok_or("--rw needs a directory")?),
            Some("--no-network") => parsed.no_network = true,
            Some("--") => {
                parsed.program = args.collect();
                break;
            }
            _ => return Err(format!("unknown argument {arg:?}")),
        }
    }
    if parsed.program.is_empty() {
        return Err("no program to run".to_owned());
    }
    Ok(parsed)
}

/// Restricts this process and executes the program; returns an exit status only when that
/// fails (126: Landlock, 127: the program).
pub fn run(args: Vec<OsString>) -> i32 {
    let arguments = match parse(args) {
        Ok(arguments) => arguments,
        Err(message) => {
            eprintln!("sandbox: {message}");
            return 126;
        }
    };
    let abi = match restrict(&arguments) {
        Ok(abi) => abi,
        Err(message) => {
            eprintln!("sandbox: cannot apply Landlock: {message}");
            return 126;
        }
    };
    let err = Command::new(&arguments.program[0])
        .args(&arguments.program[1..])
        .env(MARKER_ENV, abi)
        .exec();
    eprintln!("sandbox: cannot run {:?}: {err}", arguments.program[0]);
    127
}

/// Applies the ruleset; the ABI in force, or why there is none.
fn restrict(arguments: &Arguments) -> Result<String, String> {
    let error = |err: landlock::RulesetError| err.to_string();
    let mut ruleset = Ruleset::default()
        .set_compatibility(CompatLevel::BestEffort)
        .handle_access(AccessFs::from_all(WANTED))
        .map_err(error)?
        .scope(Scope::from_all(WANTED))
        .map_err(error)?;
    if arguments.no_network {
        ruleset = ruleset
            .handle_access(AccessNet::from_all(WANTED))
            .map_err(error)?;
    }
    let status = ruleset
        .create()
        .map_err(error)?
        .add_rules(path_beneath_rules(["/"], AccessFs::from_read(WANTED)))
        .map_err(error)?
        .add_rules(path_beneath_rules(
            &arguments.writable,
            AccessFs::from_all(WANTED),
        ))
        .map_err(error)?
        .restrict_self()
        .map_err(error)?;
    match status.ruleset {
        RulesetStatus::NotEnforced => Err(format!(
            "the kernel does not enforce it ({:?})",
            status.landlock
        )),
        RulesetStatus::FullyEnforced => Ok(abi_of(&status.landlock)),
        RulesetStatus::PartiallyEnforced => Ok(format!("{} (partial)", abi_of(&status.landlock))),
    }
}

fn abi_of(status: &landlock::LandlockStatus) -> String {
    match status {
        landlock::LandlockStatus::Available { effective_abi, .. } => {
            format!("{}", *effective_abi as i32)
        }
        other => format!("{other:?}"),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn arguments_name_the_writable_directories_and_the_program() {
        let args = |list: &[&str]| list.iter().map(OsString::from).collect::<Vec<_>>();
        assert_eq!(
            parse(args(&[
                "--rw",
                "/workspace",
                "--no-network",
                "--",
                "bash",
                "-c",
                "x"
            ])),
            Ok(Arguments {
                writable: args(&["/workspace"]),
                no_network: true,
                program: args(&["bash", "-c", "x"]),
            })
        );
        assert!(parse(args(&["--rw"])).is_err());
        assert!(parse(args(&["--",])).is_err());
        assert!(parse(args(&["--what", "--", "x"])).is_err());
    }
}

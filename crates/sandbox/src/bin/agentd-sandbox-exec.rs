//! The Landlock helper as a program of its own, for this crate's tests (agentd runs the same
//! code as `agentd sandbox-exec`): restricts itself and executes the rest of its arguments.

fn main() {
    std::process::exit(sandbox::restrict::run(
        std::env::args_os().skip(1).collect(),
    ));
}

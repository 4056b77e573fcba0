//! `mpsched`: run multipath scheduling scenarios, trace schedulers, benchmark (the library's
//! [`mpsched_cli::main`]).

fn main() -> std::process::ExitCode {
    mpsched_cli::main()
}

//! `errand`: started by the browser (native messaging) or from a terminal.

use std::process::ExitCode;

fn main() -> ExitCode {
    let args: Vec<std::ffi::OsString> = std::env::args_os().collect();
    match errand_host::host::nm::origin_arg(&args) {
        Some(origin) => errand_host::host::nm::main(&origin),
        None => errand_host::cli::main(),
    }
}

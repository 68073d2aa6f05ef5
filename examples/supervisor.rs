//! A supervisor that restarts its GPU worker process after a sticky fault.
//!
//! CUDA cannot recover a context after an illegal address, a trap or a device-side assert: every
//! later call in that process fails (cudrv reports it as `Error::ContextFaulted`, naming the
//! fault). The remedy is a new process. Here the supervisor runs jobs in a worker process; a
//! worker that sees a sticky error exits with code 3, and the supervisor starts a fresh worker
//! for the same job. The first attempt of job 1 faults on purpose (`--inject-fault`).
//!
//! Run: `cargo run --release --example supervisor`.

use std::process::{Command, ExitCode};

use cudrv::{ops, Context, DeviceBuffer, DeviceSlice, LaunchConfig, Module};

/// Exit code of a worker whose GPU context is unusable: restart it.
const GPU_FAULT: u8 = 3;

fn main() -> ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    match args.first().map(String::as_str) {
        Some("--worker") => worker(&args[1..]),
        _ => supervise(),
    }
}

fn supervise() -> ExitCode {
    let exe = std::env::current_exe().expect("the supervisor's own path");
    for job in 0..3u32 {
        for attempt in 0..3u32 {
            let mut cmd = Command::new(&exe);
            cmd.args(["--worker", &job.to_string()]);
            if job == 1 && attempt == 0 {
                cmd.arg("--inject-fault");
            }
            let status = cmd.status().expect("start a worker");
            match status.code() {
                Some(0) => {
                    println!("supervisor: job {job} done (attempt {attempt})");
                    break;
                }
                Some(c) if c == GPU_FAULT as i32 => {
                    println!("supervisor: job {job}: the worker's GPU context faulted; starting a new worker");
                }
                other => {
                    eprintln!("supervisor: job {job}: worker failed ({other:?}); giving up");
                    return ExitCode::FAILURE;
                }
            }
            if attempt == 2 {
                eprintln!("supervisor: job {job} failed three times");
                return ExitCode::FAILURE;
            }
        }
    }
    ExitCode::SUCCESS
}

fn worker(args: &[String]) -> ExitCode {
    let job: u32 = args.first().and_then(|s| s.parse().ok()).unwrap_or(0);
    let inject = args.iter().any(|a| a == "--inject-fault");
    match run_job(job, inject) {
        Ok(sum) => {
            println!("worker: job {job} -> {sum}");
            ExitCode::SUCCESS
        }
        Err(e) if e.is_sticky() => {
            eprintln!("worker: job {job}: {e}");
            ExitCode::from(GPU_FAULT)
        }
        Err(e) => {
            eprintln!("worker: job {job}: {e}");
            ExitCode::FAILURE
        }
    }
}

fn run_job(job: u32, inject_fault: bool) -> cudrv::Result<f32> {
    let ctx = Context::new(0)?;
    let stream = ctx.new_stream()?;
    if inject_fault {
        let module = Module::from_ptx(&ctx, include_str!("../tests/data/fault_kernels.ptx"), "fault_kernels")?;
        let store = module.function("fault_store")?;
        let bad: u64 = 0x10;
        let mut launch = stream.launch_builder(&store);
        launch.arg(&bad);
        // SAFETY: deliberately not: the kernel stores to an illegal address to fault the context,
        // which is what this example shows recovering from. The host touches no memory through it.
        unsafe { launch.launch(LaunchConfig::for_num_elems(1))? };
        stream.synchronize()?;
    }
    // The job: y = (job + 1) x + y over 1024 elements, summed.
    let x = DeviceBuffer::from_slice(&stream, &vec![1.0f32; 1024])?;
    let mut y = DeviceBuffer::from_slice(&stream, &vec![1.0f32; 1024])?;
    ops::axpy(&mut y, (job + 1) as f32, &x)?;
    Ok(y.to_vec()?.iter().sum())
}

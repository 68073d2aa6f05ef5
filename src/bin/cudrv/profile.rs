//! `cudrv profile`: runs a workload with the profiler on and prints its report (a table, or
//! JSON with `--json`), and writes a Chrome trace with `--trace FILE`. The workload is the
//! bundled operations and BLAS at a range of sizes, or one kernel of a user's PTX file with
//! its grid, block and arguments given on the command line. Each launch runs `--warmup` times
//! unprofiled, then `--runs` times profiled.

use std::sync::Arc;

use half::{bf16, f16};

use cudrv::blas::{Gemm, MathMode, Transpose};
use cudrv::selftest::Rng;
use cudrv::{ops, Context, DeviceBuffer, Error, LaunchConfig, Module, Result, Stream};

/// A kernel argument from the command line.
#[derive(Clone, Debug, PartialEq)]
pub enum ArgSpec {
    I32(i32),
    U32(u32),
    I64(i64),
    U64(u64),
    F32(f32),
    F64(f64),
    /// A device buffer of `count` elements of `elem_bytes` each; random floats in [-1, 1] (or
    /// zeros) for float types, zeros for integers.
    Buffer {
        ty: &'static str,
        count: usize,
        zeros: bool,
    },
}

/// A user's kernel to profile.
#[derive(Clone, Debug, PartialEq)]
pub struct UserKernel {
    pub ptx: String,
    pub kernel: String,
    pub grid: (u32, u32, u32),
    pub block: (u32, u32, u32),
    pub smem: u32,
    pub args: Vec<ArgSpec>,
}

/// What `cudrv profile` was asked.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    pub runs: usize,
    pub warmup: usize,
    pub json: bool,
    /// Waits for each profiled run before the next (launches do not queue behind each other).
    pub sync: bool,
    pub trace: Option<String>,
    pub user: Option<UserKernel>,
}

fn dims(what: &str, v: &str) -> std::result::Result<(u32, u32, u32), String> {
    let parts: Vec<u32> = v
        .split(',')
        .map(|p| p.trim().parse::<u32>().ok().filter(|&x| x > 0))
        .collect::<Option<Vec<_>>>()
        .ok_or_else(|| format!("{what} takes X[,Y[,Z]] of positive numbers, not {v:?}"))?;
    match parts[..] {
        [x] => Ok((x, 1, 1)),
        [x, y] => Ok((x, y, 1)),
        [x, y, z] => Ok((x, y, z)),
        _ => Err(format!("{what} takes at most three dimensions, not {v:?}")),
    }
}

fn arg(spec: &str) -> std::result::Result<ArgSpec, String> {
    let bad = || {
        format!(
            "--arg {spec:?}: use TYPE:VALUE (i32, u32, i64, u64, f32, f64), buf:TYPE:N (random floats, zero \
             integers) or zeros:TYPE:N"
        )
    };
    let parts: Vec<&str> = spec.split(':').collect();
    let value = |p: &str| -> std::result::Result<ArgSpec, String> {
        let v = p.trim();
        let out = match parts[0] {
            "i32" => v.parse().map(ArgSpec::I32).ok(),
            "u32" => v.parse().map(ArgSpec::U32).ok(),
            "i64" => v.parse().map(ArgSpec::I64).ok(),
            "u64" => v.parse().map(ArgSpec::U64).ok(),
            "f32" => v.parse().map(ArgSpec::F32).ok(),
            "f64" => v.parse().map(ArgSpec::F64).ok(),
            _ => None,
        };
        out.ok_or_else(bad)
    };
    match parts[..] {
        [_, v] => value(v),
        [kind @ ("buf" | "zeros"), ty, n] => {
            let ty = ["f32", "f64", "f16", "bf16", "i32", "u32", "i64", "u64", "u8"]
                .into_iter()
                .find(|t| *t == ty)
                .ok_or_else(bad)?;
            let count = n.parse::<usize>().ok().filter(|&c| c > 0).ok_or_else(bad)?;
            Ok(ArgSpec::Buffer {
                ty,
                count,
                zeros: kind == "zeros",
            })
        }
        _ => Err(bad()),
    }
}

/// Parses the options after `cudrv profile`.
pub fn options(args: &[String]) -> std::result::Result<Options, String> {
    let mut o = Options {
        runs: 20,
        warmup: 3,
        json: false,
        sync: false,
        trace: None,
        user: None,
    };
    let (mut ptx, mut kernel, mut grid, mut block, mut smem, mut kargs) = (None, None, None, None, 0u32, Vec::new());
    let mut it = args.iter();
    while let Some(flag) = it.next() {
        let mut value = || it.next().cloned().ok_or_else(|| format!("{flag} needs a value"));
        match flag.as_str() {
            "--json" => o.json = true,
            "--sync" => o.sync = true,
            "--runs" | "--warmup" => {
                let v = value()?;
                let n = v
                    .parse::<usize>()
                    .ok()
                    .filter(|&n| flag == "--warmup" || n > 0)
                    .ok_or_else(|| format!("{flag} takes a number (runs at least 1), not {v:?}"))?;
                if flag == "--runs" {
                    o.runs = n;
                } else {
                    o.warmup = n;
                }
            }
            "--trace" => o.trace = Some(value()?),
            "--ptx" => ptx = Some(value()?),
            "--kernel" => kernel = Some(value()?),
            "--grid" => grid = Some(dims("--grid", &value()?)?),
            "--block" => block = Some(dims("--block", &value()?)?),
            "--smem" => {
                let v = value()?;
                smem = v.parse().map_err(|_| format!("--smem takes bytes, not {v:?}"))?;
            }
            "--arg" => kargs.push(arg(&value()?)?),
            other => return Err(format!("unknown option {other:?} to profile")),
        }
    }
    match (ptx, kernel, grid, block) {
        (None, None, None, None) if kargs.is_empty() && smem == 0 => {}
        (Some(ptx), Some(kernel), Some(grid), Some(block)) => {
            o.user = Some(UserKernel {
                ptx,
                kernel,
                grid,
                block,
                smem,
                args: kargs,
            })
        }
        _ => return Err("a user kernel needs --ptx FILE, --kernel NAME, --grid and --block".into()),
    }
    Ok(o)
}

/// Runs `f` `warmup` times with the profiler off, then `runs` times with it on.
fn measure(ctx: &Arc<Context>, o: &Options, f: &mut dyn FnMut() -> Result<()>) -> Result<()> {
    ctx.profiler().disable();
    for _ in 0..o.warmup {
        f()?;
    }
    ctx.profiler().enable()?;
    for _ in 0..o.runs {
        f()?;
        if o.sync {
            ctx.synchronize()?;
        }
    }
    ctx.profiler().disable();
    Ok(())
}

fn random<T: cudrv::selftest::FromF64 + cudrv::DeviceRepr>(
    s: &Arc<Stream>,
    n: usize,
    seed: u64,
) -> Result<DeviceBuffer<T>> {
    DeviceBuffer::from_slice(s, &Rng::new(seed).vec::<T>(n, -1.0, 1.0))
}

/// The bundled operations and BLAS at a range of sizes.
fn bundled(ctx: &Arc<Context>, s: &Arc<Stream>, o: &Options) -> Result<()> {
    for n in [1usize << 20, 1 << 24] {
        let x = random::<f32>(s, n, 1)?;
        let mut y = random::<f32>(s, n, 2)?;
        let mut out = DeviceBuffer::<f32>::zeroed(s, n)?;
        measure(ctx, o, &mut || ops::fill(&mut out, 0.5))?;
        measure(ctx, o, &mut || ops::axpy(&mut y, 0.5, &x))?;
        measure(ctx, o, &mut || ops::add(&mut out, &x, &y))?;
        measure(ctx, o, &mut || ops::sum(&x).map(|_| ()))?;
    }
    let (rows, cols) = (4096, 4096);
    let x = random::<f32>(s, rows * cols, 3)?;
    let mut out = DeviceBuffer::<f32>::zeroed(s, rows * cols)?;
    measure(ctx, o, &mut || ops::softmax_rows(&mut out, &x, rows, cols))?;
    for size in [256usize, 1024, 4096] {
        let a = random::<f32>(s, size * size, 4)?;
        let b = random::<f32>(s, size * size, 5)?;
        let mut c = DeviceBuffer::<f32>::zeroed(s, size * size)?;
        let g = Gemm::new(Transpose::N, Transpose::N, size, size, size);
        measure(ctx, o, &mut || g.run(&a, &b, &mut c))?;
        if size == 4096 {
            let tf32 = g.math(MathMode::Tf32);
            measure(ctx, o, &mut || tf32.run(&a, &b, &mut c))?;
        }
    }
    let size = 4096;
    let a = random::<f16>(s, size * size, 6)?;
    let b = random::<f16>(s, size * size, 7)?;
    let mut c = DeviceBuffer::<f16>::zeroed(s, size * size)?;
    let g = Gemm::<f32>::new(Transpose::N, Transpose::T, size, size, size);
    measure(ctx, o, &mut || g.run(&a, &b, &mut c))?;
    let a = random::<bf16>(s, size * size, 8)?;
    let b = random::<bf16>(s, size * size, 9)?;
    let mut c = DeviceBuffer::<bf16>::zeroed(s, size * size)?;
    measure(ctx, o, &mut || g.run(&a, &b, &mut c))?;
    for (m, n) in [(4096usize, 4096usize), (16384, 16384)] {
        let a = random::<f32>(s, m * n, 10)?;
        let x = random::<f32>(s, n, 11)?;
        let mut y = DeviceBuffer::<f32>::zeroed(s, m)?;
        measure(ctx, o, &mut || {
            cudrv::blas::gemv(Transpose::N, m, n, 1.0, &a, m, &x, 1, 0.0, &mut y, 1)
        })?;
    }
    Ok(())
}

/// The bytes of a buffer argument's initial contents.
fn buffer_bytes(ty: &str, count: usize, zeros: bool, seed: u64) -> Vec<u8> {
    let mut rng = Rng::new(seed);
    let mut out = Vec::new();
    for _ in 0..count {
        let v = if zeros { 0.0 } else { rng.uniform(-1.0, 1.0) };
        match ty {
            "f32" => out.extend((v as f32).to_le_bytes()),
            "f64" => out.extend(v.to_le_bytes()),
            "f16" => out.extend(f16::from_f64(v).to_le_bytes()),
            "bf16" => out.extend(bf16::from_f64(v).to_le_bytes()),
            "i32" | "u32" => out.extend([0u8; 4]),
            "i64" | "u64" => out.extend([0u8; 8]),
            _ => out.push(0),
        }
    }
    out
}

/// One kernel of a user's PTX, launched as the command line says.
fn user(ctx: &Arc<Context>, s: &Arc<Stream>, o: &Options, k: &UserKernel) -> Result<()> {
    let module = Module::from_file(ctx, &k.ptx)?;
    let f = module.function(&k.kernel)?;
    if k.smem > f.max_dynamic_shared_memory() {
        f.set_max_dynamic_shared_memory(k.smem)?;
    }
    let mut buffers = Vec::new();
    for (i, a) in k.args.iter().enumerate() {
        if let ArgSpec::Buffer { ty, count, zeros } = a {
            buffers.push(DeviceBuffer::from_slice(
                s,
                &buffer_bytes(ty, *count, *zeros, i as u64),
            )?);
        }
    }
    let config = LaunchConfig {
        grid_dim: k.grid,
        block_dim: k.block,
        shared_mem_bytes: k.smem,
    };
    measure(ctx, o, &mut || {
        let mut l = s.launch_builder(&f);
        let mut next_buffer = buffers.iter();
        for a in &k.args {
            match a {
                ArgSpec::I32(v) => l.arg(v),
                ArgSpec::U32(v) => l.arg(v),
                ArgSpec::I64(v) => l.arg(v),
                ArgSpec::U64(v) => l.arg(v),
                ArgSpec::F32(v) => l.arg(v),
                ArgSpec::F64(v) => l.arg(v),
                ArgSpec::Buffer { .. } => l.arg(next_buffer.next().expect("one buffer per buffer argument")),
            };
        }
        // SAFETY: the arguments are what the command line gave; where the driver reports the
        // kernel's parameter sizes (12.4+) the launch checks them, and each buffer holds the
        // elements asked for. A kernel reading past them is the user's to fix, as with any
        // launch; the driver reports the fault.
        unsafe { l.launch(config) }
    })?;
    s.synchronize()
}

pub fn run(o: &Options) -> Result<bool> {
    let ctx = Context::new(0)?;
    let s = ctx.new_stream()?;
    if !o.json {
        println!(
            "profile on {} (driver CUDA {}): {} profiled runs of each launch after {} warm-up runs",
            ctx.device().name()?,
            cudrv::driver_version()?,
            o.runs,
            o.warmup
        );
    }
    match &o.user {
        Some(k) => user(&ctx, &s, o, k)?,
        None => bundled(&ctx, &s, o)?,
    }
    let report = ctx.profiler().report()?;
    if o.json {
        println!("{}", report.to_json());
    } else {
        print!("{}", report.table());
        match ctx.profiler().why_not_cupti() {
            None => println!("timed with {:?}", ctx.profiler().timing()),
            Some(why) => println!("timed with events ({why})"),
        }
    }
    if let Some(path) = &o.trace {
        std::fs::write(path, report.chrome_trace()).map_err(|e| Error::Io {
            path: path.clone(),
            message: e.to_string(),
        })?;
        if !o.json {
            println!(
                "trace: {path} ({} launches); open it in ui.perfetto.dev or chrome://tracing",
                report.samples.len()
            );
        }
    }
    Ok(true)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn parse(args: &[&str]) -> std::result::Result<Options, String> {
        options(&crate::strings(args))
    }

    #[test]
    fn options_parse_and_refuse() {
        let o = parse(&["--runs", "5", "--json", "--trace", "t.json"]).unwrap();
        assert_eq!(
            (o.runs, o.warmup, o.json, o.trace.as_deref()),
            (5, 3, true, Some("t.json"))
        );
        let o = parse(&[
            "--ptx",
            "k.ptx",
            "--kernel",
            "k",
            "--grid",
            "10,2",
            "--block",
            "256",
            "--arg",
            "buf:f32:100",
            "--arg",
            "u64:100",
            "--arg",
            "f32:-1.5",
        ])
        .unwrap();
        let k = o.user.unwrap();
        assert_eq!((k.grid, k.block), ((10, 2, 1), (256, 1, 1)));
        assert_eq!(
            k.args,
            vec![
                ArgSpec::Buffer {
                    ty: "f32",
                    count: 100,
                    zeros: false
                },
                ArgSpec::U64(100),
                ArgSpec::F32(-1.5)
            ]
        );
        for bad in [
            &["--runs", "0"][..],
            &["--ptx", "k.ptx"],
            &["--grid", "0"],
            &["--arg", "q32:1"],
            &["--arg", "buf:f32:0"],
            &["--frobnicate"],
            &["--trace"],
        ] {
            assert!(parse(bad).is_err(), "{bad:?}");
        }
    }
}

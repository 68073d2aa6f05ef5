//! Fault injection and failure modes on a real GPU: contexts freed once their last handle goes
//! (whatever ran in them), size overflows as errors, BLAS degenerate shapes as BLAS defines them,
//! waits with a deadline, and a sticky fault (an illegal address) in a child process, whose report
//! the parent checks: the fault is named as sticky, the next call fails fast naming it, and
//! `Context::health` says so.
//!
//! Without a GPU each test reports itself skipped; with `REQUIRE_GPU=1` that is a failure.

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;
use std::time::{Duration, Instant};

use cudrv::blas::{Gemm, Transpose};
use cudrv::{ops, DeviceBuffer, DeviceSlice, DeviceSliceMut, Error, LaunchConfig, Module, PinnedHostBuffer};

const FAULT_PTX: &str = include_str!("data/fault_kernels.ptx");
/// Set in the child process of `sticky_fault_is_named_and_refuses_later_calls`.
const CHILD_ENV: &str = "CUDRV_FAULT_CHILD";
// The tests of this file run one at a time (`gpu::alone`): the deadline test needs no other
// thread of the process in a call that synchronizes the device (a synchronous free, a context's
// teardown), which holds the driver until the device is idle, so a stream query made meanwhile
// waits too (seen on the H100); and the child's deliberate fault stays apart from every other
// test.

/// A zeroed u32 flag on a stream of its own, so that a copy to it runs beside the test's stream
/// (the fault_wait kernels poll it).
fn side_flag(ctx: &Arc<cudrv::Context>) -> DeviceBuffer<u32> {
    let side = ctx.new_stream().unwrap();
    let flag = DeviceBuffer::<u32>::zeroed(&side, 1).unwrap();
    side.synchronize().unwrap();
    flag
}

#[test]
fn context_is_freed_after_bundled_kernels_ran_in_it() {
    let Some((ctx, _serial)) = gpu::alone("context_is_freed_after_bundled_kernels_ran_in_it") else {
        return;
    };
    let weak = Arc::downgrade(&ctx);
    {
        let stream = ctx.new_stream().unwrap();
        let x = DeviceBuffer::from_slice(&stream, &[1.0f32, 2.0, 3.0]).unwrap();
        let mut y = DeviceBuffer::from_slice(&stream, &[1.0f32; 3]).unwrap();
        ops::axpy(&mut y, 2.0, &x).unwrap();
        assert_eq!(y.to_vec().unwrap(), vec![3.0, 5.0, 7.0]);
        let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 64 * 64]).unwrap();
        let mut c = DeviceBuffer::<f32>::zeroed(&stream, 64 * 64).unwrap();
        Gemm::new(Transpose::N, Transpose::N, 64, 64, 64)
            .run(&a, &a, &mut c)
            .unwrap();
        assert!(c.to_vec().unwrap().iter().all(|&v| v == 64.0));
        // A Function handed out keeps the context alive on its own.
        let f = ctx.kernel("axpy_f32").unwrap();
        drop((x, y, a, c, stream));
        drop(ctx);
        assert!(weak.upgrade().is_some(), "a live Function must keep its context");
        drop(f);
    }
    assert!(
        weak.upgrade().is_none(),
        "the context outlived every handle: something holds it in a cycle"
    );
    // A new context on the same device works after the old one was torn down.
    let ctx = cudrv::Context::new(0).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut y = DeviceBuffer::from_slice(&stream, &[1.0f32; 4]).unwrap();
    let x = DeviceBuffer::from_slice(&stream, &[1.0f32; 4]).unwrap();
    ops::axpy(&mut y, 1.0, &x).unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![2.0; 4]);
}

#[test]
fn oversized_pinned_and_device_allocations_are_errors() {
    let Some((ctx, _serial)) = gpu::alone("oversized_pinned_and_device_allocations_are_errors") else {
        return;
    };
    // Sizes whose page round-up overflows are refused before the driver sees them.
    for len in [usize::MAX - 100, usize::MAX - 4094, usize::MAX] {
        match PinnedHostBuffer::<u8>::new(&ctx, len) {
            Err(Error::InvalidArgument(msg)) => assert!(msg.contains("overflow"), "{msg}"),
            other => panic!("pinned buffer of {len} bytes: {other:?}"),
        }
    }
    // A size that rounds up fine but no machine has: the driver's error, not a crash.
    assert!(PinnedHostBuffer::<u8>::new(&ctx, usize::MAX / 2 + 1).is_err());
    assert!(matches!(
        PinnedHostBuffer::<u64>::new(&ctx, usize::MAX / 4),
        Err(Error::InvalidArgument(_))
    ));
    let stream = ctx.new_stream().unwrap();
    assert!(DeviceBuffer::<f32>::zeroed(&stream, usize::MAX / 2).is_err());
    // Still usable afterwards.
    let b = DeviceBuffer::from_slice(&stream, &[5u32; 8]).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![5; 8]);
}

/// k = 0: C = beta C (alpha times an empty sum); alpha = 0: C = beta C without reading A and B;
/// m = 0 or n = 0: nothing to do, C untouched. Every op pair, f32 / f16 / f64.
#[test]
fn gemm_degenerate_shapes_follow_blas() {
    let Some((ctx, _serial)) = gpu::alone("gemm_degenerate_shapes_follow_blas") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let (m, n) = (37usize, 21usize);
    let c0: Vec<f32> = (0..m * n).map(|i| (i % 7) as f32 - 3.0).collect();
    for ta in [Transpose::N, Transpose::T] {
        for tb in [Transpose::N, Transpose::T] {
            for beta in [0.0f32, 0.5, 1.0] {
                // k = 0 with empty A and B.
                let a = DeviceBuffer::<f32>::zeroed(&stream, 0).unwrap();
                let b = DeviceBuffer::<f32>::zeroed(&stream, 0).unwrap();
                let mut c = DeviceBuffer::from_slice(&stream, &c0).unwrap();
                Gemm::new(ta, tb, m, n, 0)
                    .beta(beta)
                    .run(&a, &b, &mut c)
                    .unwrap_or_else(|e| panic!("k = 0, {ta:?}{tb:?}, beta {beta}: {e}"));
                let want: Vec<f32> = c0.iter().map(|&v| beta * v).collect();
                assert_eq!(c.to_vec().unwrap(), want, "k = 0, {ta:?}{tb:?}, beta {beta}");
                // alpha = 0 with NaN in A and B: they must not be read.
                let k = 13;
                let nan = DeviceBuffer::from_slice(&stream, &vec![f32::NAN; m.max(n) * k]).unwrap();
                let mut c = DeviceBuffer::from_slice(&stream, &c0).unwrap();
                Gemm::new(ta, tb, m, n, k)
                    .alpha(0.0)
                    .beta(beta)
                    .run(&nan, &nan, &mut c)
                    .unwrap();
                assert_eq!(c.to_vec().unwrap(), want, "alpha = 0, {ta:?}{tb:?}, beta {beta}");
            }
            // m = 0 and n = 0: C (here a poisoned spare buffer) is untouched.
            let a = DeviceBuffer::from_slice(&stream, &[1.0f32; 64]).unwrap();
            let mut c = DeviceBuffer::from_slice(&stream, &[f32::NAN; 4]).unwrap();
            Gemm::new(ta, tb, 0, 4, 4).run(&a, &a, &mut c).unwrap();
            Gemm::new(ta, tb, 4, 0, 4).run(&a, &a, &mut c).unwrap();
            assert!(c.to_vec().unwrap().iter().all(|v| v.is_nan()));
        }
    }
    // The other types take the same path.
    let a16 = DeviceBuffer::<half::f16>::zeroed(&stream, 0).unwrap();
    let c16: Vec<half::f16> = (0..m * n).map(|i| half::f16::from_f32((i % 5) as f32)).collect();
    let mut c = DeviceBuffer::from_slice(&stream, &c16).unwrap();
    Gemm::new(Transpose::N, Transpose::T, m, n, 0)
        .beta(2.0)
        .run(&a16, &a16, &mut c)
        .unwrap();
    let got = c.to_vec().unwrap();
    assert!(got.iter().zip(&c16).all(|(g, v)| g.to_f32() == 2.0 * v.to_f32()));
    let a64 = DeviceBuffer::<f64>::zeroed(&stream, 0).unwrap();
    let mut c = DeviceBuffer::from_slice(&stream, &vec![3.0f64; m * n]).unwrap();
    Gemm::new(Transpose::T, Transpose::N, m, n, 0)
        .beta(-1.0)
        .run(&a64, &a64, &mut c)
        .unwrap();
    assert!(c.to_vec().unwrap().iter().all(|&v| v == -3.0));
}

#[test]
fn waits_with_a_deadline_time_out_and_leave_the_work_running() {
    let Some((ctx, _serial)) = gpu::alone("waits_with_a_deadline_time_out_and_leave_the_work_running") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let module = Module::from_ptx(&ctx, FAULT_PTX, "fault_kernels").unwrap();
    let wait = module.function("fault_wait").unwrap();
    // The kernel waits for a flag that a copy on another stream sets once the deadlines have
    // been seen to pass (at most 10^10 cycles, seconds, if the flag never came).
    let mut flag = side_flag(&ctx);
    let (flag_ptr, cap): (u64, u64) = (flag.device_ptr(), 10_000_000_000);
    let mut launch = stream.launch_builder(&wait);
    launch.arg(&flag_ptr).arg(&cap);
    // SAFETY: fault_wait(u64 flag, u64 max_cycles) reads one u32 of the live buffer `flag`.
    unsafe { launch.launch(LaunchConfig::for_num_elems(1)) }.unwrap();
    let done = stream.record_event().unwrap();
    let start = Instant::now();
    match stream.synchronize_timeout(Duration::from_millis(30)) {
        Err(Error::Timeout { waited_ms, .. }) => assert_eq!(waited_ms, 30),
        other => panic!("expected a timeout, got {other:?}"),
    }
    assert!(start.elapsed() >= Duration::from_millis(30));
    assert!(matches!(
        done.wait_timeout(Duration::from_millis(10)),
        Err(Error::Timeout { .. })
    ));
    assert!(!stream.query().unwrap(), "the kernel must still be running");
    flag.copy_from_slice(&[1]).unwrap();
    done.wait_timeout(Duration::from_secs(20)).unwrap();
    stream.synchronize_timeout(Duration::from_secs(20)).unwrap();
    assert!(stream.query().unwrap());
}

/// The child half of `sticky_fault_is_named_and_refuses_later_calls`: runs only in the child
/// process that test starts (CUDRV_FAULT_CHILD=1); it faults the GPU on purpose and reports.
#[test]
fn sticky_fault_child_process() {
    if std::env::var(CHILD_ENV).as_deref() != Ok("1") {
        return;
    }
    let ctx = cudrv::Context::new(0).expect("child: context");
    let stream = ctx.new_stream().expect("child: stream");
    let module = Module::from_ptx(&ctx, FAULT_PTX, "fault_kernels").expect("child: module");
    let store = module.function("fault_store").expect("child: function");
    let bad: u64 = 0x10;
    let mut launch = stream.launch_builder(&store);
    launch.arg(&bad);
    // SAFETY: deliberately not: the kernel stores to an illegal address, which is the point of
    // this child process. The fault stays on the device; the host touches no memory through it.
    let launched = unsafe { launch.launch(LaunchConfig::for_num_elems(1)) };
    let first = launched.and_then(|_| stream.synchronize());
    let first_sticky = first.as_ref().err().is_some_and(Error::is_sticky);
    println!("REPORT first={first:?}");
    println!("REPORT sticky={first_sticky}");
    let next = DeviceBuffer::<f32>::zeroed(&stream, 16).map(|_| ());
    println!(
        "REPORT next={}",
        next.as_ref().err().map(|e| e.to_string()).unwrap_or_default()
    );
    println!(
        "REPORT next_sticky={}",
        next.as_ref().err().is_some_and(Error::is_sticky)
    );
    let health = ctx.health();
    println!(
        "REPORT health={}",
        health.as_ref().err().map(|e| e.to_string()).unwrap_or_default()
    );
    let stream2 = ctx.new_stream().map(|_| ());
    println!(
        "REPORT new_stream_faulted={}",
        matches!(stream2, Err(Error::ContextFaulted { .. }))
    );
}

#[test]
fn sticky_fault_is_named_and_refuses_later_calls() {
    let Some((ctx, _serial)) = gpu::alone("sticky_fault_is_named_and_refuses_later_calls") else {
        return;
    };
    drop(ctx);
    let out = std::process::Command::new(std::env::current_exe().unwrap())
        .args([
            "--exact",
            "sticky_fault_child_process",
            "--nocapture",
            "--test-threads",
            "1",
        ])
        .env(CHILD_ENV, "1")
        .output()
        .expect("start the child process");
    let text = String::from_utf8_lossy(&out.stdout);
    // libtest may print the test's name on the same line before the first report.
    let report: Vec<&str> = text
        .lines()
        .filter_map(|l| l.find("REPORT ").map(|i| &l[i + "REPORT ".len()..]))
        .collect();
    let field = |name: &str| {
        report
            .iter()
            .find_map(|l| l.strip_prefix(&format!("{name}=")))
            .unwrap_or_else(|| {
                panic!(
                    "child report lacks {name}:\n{text}\n{}",
                    String::from_utf8_lossy(&out.stderr)
                )
            })
    };
    assert!(
        out.status.success(),
        "child failed:\n{text}\n{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(
        field("first").contains("Err"),
        "the fault must be reported: {}",
        field("first")
    );
    assert_eq!(field("sticky"), "true", "{}", field("first"));
    let next = field("next");
    assert!(next.contains("unusable after an earlier fault"), "{next}");
    assert!(
        next.contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "the original fault must be named: {next}"
    );
    assert_eq!(field("next_sticky"), "true");
    assert!(
        field("health").contains("CUDA_ERROR_ILLEGAL_ADDRESS"),
        "{}",
        field("health")
    );
    assert_eq!(field("new_stream_faulted"), "true");
    // This process's context is untouched by the child's fault.
    let ctx = cudrv::Context::new(0).unwrap();
    ctx.health().unwrap();
}

/// Binary images are checked against their own headers before the driver reads them: whole ones
/// load, truncated or lying ones are refused with `InvalidArgument`, and the context stays usable.
#[test]
fn truncated_or_lying_images_are_refused() {
    let Some((ctx, _serial)) = gpu::alone("truncated_or_lying_images_are_refused") else {
        return;
    };
    let images: [&[u8]; 2] = [
        include_bytes!("data/test_kernels.sm_90.cubin"),
        include_bytes!("data/test_kernels.sm_90.fatbin"),
    ];
    for image in images {
        if ctx.compute_capability() == (9, 0) {
            let m = Module::from_image(&ctx, image, "whole").expect("the whole image loads");
            m.function("test_add_one").expect("its kernel is there");
        }
        for cut in [8, 64, image.len() / 3, image.len() - 1] {
            match Module::from_image(&ctx, &image[..cut], "cut") {
                Err(Error::InvalidArgument(msg)) => assert!(msg.contains("cut"), "{msg}"),
                other => panic!("image cut at {cut}: {other:?}"),
            }
        }
    }
    let mut lie = images[1].to_vec();
    lie[8..16].copy_from_slice(&(1u64 << 40).to_le_bytes());
    assert!(matches!(
        Module::from_image(&ctx, &lie, "lie"),
        Err(Error::InvalidArgument(_))
    ));
    ctx.health().unwrap();
}

/// Where the driver reports a kernel's parameters (12.4 and later, as on the test machines), a
/// launch with the wrong number of arguments or a wrong-sized one is refused before it is queued.
#[test]
fn launch_arguments_are_checked_against_the_kernel() {
    let Some((ctx, _serial)) = gpu::alone("launch_arguments_are_checked_against_the_kernel") else {
        return;
    };
    let stream = ctx.new_stream().unwrap();
    let module = Module::from_ptx(&ctx, FAULT_PTX, "fault_kernels").unwrap();
    let spin = module.function("fault_spin").unwrap();
    assert_eq!(
        spin.param_sizes(),
        Some(&[8usize][..]),
        "the driver should report the parameters"
    );
    let axpy = ctx.kernel("axpy_f32").unwrap();
    assert_eq!(axpy.param_sizes().map(<[usize]>::len), Some(4));
    let ns: u64 = 1000;
    let small: u32 = 1000;
    let cfg = LaunchConfig::for_num_elems(1);
    let mut l = stream.launch_builder(&spin);
    // SAFETY: refused before the driver sees it (no arguments for fault_spin(u64)).
    let none = unsafe { l.launch(cfg) };
    assert!(
        matches!(none, Err(Error::InvalidArgument(ref m)) if m.contains("takes 1 parameters; 0")),
        "{none:?}"
    );
    let mut l = stream.launch_builder(&spin);
    l.arg(&small);
    // SAFETY: refused before the driver sees it (a u32 for fault_spin's u64).
    let wrong = unsafe { l.launch(cfg) };
    assert!(
        matches!(wrong, Err(Error::InvalidArgument(ref m)) if m.contains("argument 0 is 4 bytes")),
        "{wrong:?}"
    );
    let mut l = stream.launch_builder(&spin);
    l.arg(&ns).arg(&ns);
    // SAFETY: refused before the driver sees it (two arguments for one parameter).
    let two = unsafe { l.launch(cfg) };
    assert!(matches!(two, Err(Error::InvalidArgument(_))), "{two:?}");
    let mut l = stream.launch_builder(&spin);
    l.arg(&ns);
    // SAFETY: fault_spin(u64) reads its one parameter and touches no memory.
    unsafe { l.launch(cfg) }.unwrap();
    stream.synchronize().unwrap();
}

/// Handles dropped while the work that uses them is still queued: a buffer a waiting kernel will
/// write, the stream it runs on, its Function and its Module. The buffer's memory must not reach
/// another stream's allocation before the kernel is done with it, and nothing may crash.
#[test]
fn handles_dropped_while_work_is_in_flight() {
    let Some((ctx, _serial)) = gpu::alone("handles_dropped_while_work_is_in_flight") else {
        return;
    };
    let mut flag = side_flag(&ctx);
    let n: u64 = 1 << 20;
    let pattern: Vec<u32> = (0..n as u32).map(|i| i.wrapping_mul(2_654_435_761)).collect();
    {
        let stream = ctx.new_stream().unwrap();
        let module = Module::from_ptx(&ctx, FAULT_PTX, "fault_kernels").unwrap();
        let fill = module.function("fault_wait_fill").unwrap();
        let target = DeviceBuffer::<u32>::zeroed(&stream, n as usize).unwrap();
        let (flag_ptr, cap, out) = (flag.device_ptr(), 4_000_000_000u64, target.device_ptr());
        let mut launch = stream.launch_builder(&fill);
        launch.arg(&flag_ptr).arg(&cap).arg(&out).arg(&n);
        // SAFETY: fault_wait_fill(flag, max_cycles, out, n) reads one u32 at flag and writes n
        // u32 at out, both live buffers (target's memory is freed stream-ordered after it).
        unsafe { launch.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
        drop(target);
        drop(fill);
        drop(module);
        drop(stream);
    }
    // Allocations on another stream while the fill is still waiting: none may get its memory.
    let other = ctx.new_stream().unwrap();
    let fresh: Vec<DeviceBuffer<u32>> = (0..4)
        .map(|_| DeviceBuffer::from_slice(&other, &pattern).unwrap())
        .collect();
    flag.copy_from_slice(&[1]).unwrap();
    ctx.synchronize().unwrap();
    for b in &fresh {
        assert!(
            b.to_vec().unwrap() == pattern,
            "a buffer was handed memory still being written"
        );
    }
    ctx.health().unwrap();
}

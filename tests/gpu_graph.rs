//! GPU tests of graphs: capture through a closure, replay, in-place updates (re-recorded work and
//! kernel-argument patches), memory freed during a capture, and captures that fail. Each skips
//! visibly without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::graph::GraphUpdate;
use cudrv::selftest::{rel_error, Rng};
use cudrv::{ops, DeviceBuffer, DeviceSlice, Error, LaunchConfig, Stream};

fn seed() -> u64 {
    gpu::fresh_seed()
}

fn random(n: usize, seed: u64) -> Vec<f32> {
    Rng::new(seed).vec(n, -10.0, 10.0)
}

/// A poisoned buffer: NaN everywhere until the graph writes it.
fn poisoned(s: &Arc<Stream>, n: usize) -> DeviceBuffer<f32> {
    DeviceBuffer::from_slice(s, &vec![f32::NAN; n]).unwrap()
}

/// y = alpha * (x + 1) with the temporary made and dropped inside the step.
fn step(y: &mut DeviceBuffer<f32>, x: &DeviceBuffer<f32>, alpha: f32) -> cudrv::Result<()> {
    let mut t = DeviceBuffer::<f32>::zeroed(x.stream(), x.len())?;
    ops::fill(&mut t, 1.0)?;
    ops::axpy(&mut t, 1.0, x)?;
    ops::scale(y, alpha, &t)
}

#[test]
fn graphs_capture_replay_and_update_in_place() {
    let Some(ctx) = gpu!("graphs_capture_replay_and_update_in_place") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = seed();
    let n = 10_007;
    let (xa, xb) = (random(n, seed), random(n, seed ^ 1));
    let x1 = DeviceBuffer::from_slice(&s, &xa).unwrap();
    let x2 = DeviceBuffer::from_slice(&s, &xb).unwrap();
    let mut y1 = poisoned(&s, n);
    let mut y2 = poisoned(&s, n);
    let mut g = s.capture(|_| step(&mut y1, &x1, 2.0)).unwrap();
    assert_eq!(g.kernel_nodes().unwrap().len(), 3);
    // Recording runs nothing.
    assert!(y1.to_vec().unwrap().iter().all(|v| v.is_nan()));
    // The temporary dropped inside the capture is kept by the graph: memory allocated now must
    // not alias it, or this fill would corrupt every replay.
    let junk: Vec<_> = (0..4)
        .map(|_| DeviceBuffer::from_slice(&s, &vec![1e30f32; n]).unwrap())
        .collect();
    for _ in 0..2 {
        g.launch(&s).unwrap();
    }
    let want = |x: &[f32], a: f64| -> Vec<f64> { x.iter().map(|&v| a * (v as f64 + 1.0)).collect() };
    assert!(rel_error(&y1.to_vec().unwrap(), &want(&xa, 2.0)) < 1e-6, "seed {seed}");
    // Other buffers and another scalar: the same kernels, patched in place.
    let how = g.update(&s, |_| step(&mut y2, &x2, -3.0)).unwrap();
    assert_eq!(how, GraphUpdate::InPlace);
    g.launch(&s).unwrap();
    assert!(rel_error(&y2.to_vec().unwrap(), &want(&xb, -3.0)) < 1e-6, "seed {seed}");
    // A different chain (one kernel more): rebuilt, with the driver's reason, and still right.
    let how = g
        .update(&s, |_| {
            step(&mut y1, &x2, 0.5)?;
            ops::scale_in_place(&mut y1, 4.0)
        })
        .unwrap();
    match &how {
        GraphUpdate::Rebuilt { reason } => assert!(!reason.is_empty()),
        other => panic!("expected a rebuild, got {other:?}"),
    }
    assert_eq!(g.kernel_nodes().unwrap().len(), 4);
    g.launch(&s).unwrap();
    assert!(rel_error(&y1.to_vec().unwrap(), &want(&xb, 2.0)) < 1e-6, "seed {seed}");
    drop(junk);
}

#[test]
fn graphs_launch_on_another_stream_and_outlive_nothing() {
    let Some(ctx) = gpu!("graphs_launch_on_another_stream_and_outlive_nothing") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let other = ctx.new_stream().unwrap();
    let seed = seed();
    let n = 1 << 16;
    let xa = random(n, seed);
    let x = DeviceBuffer::from_slice(&s, &xa).unwrap();
    let mut y = poisoned(&s, n);
    let g = s.capture(|_| step(&mut y, &x, 1.5)).unwrap();
    for _ in 0..3 {
        g.launch(&other).unwrap();
    }
    // The kept temporary goes back to the pool ordered after the launches on `other`.
    drop(g);
    let reuse: Vec<_> = (0..4)
        .map(|_| DeviceBuffer::from_slice(&s, &vec![7.0f32; n]).unwrap())
        .collect();
    other.synchronize().unwrap();
    let want: Vec<f64> = xa.iter().map(|&v| 1.5 * (v as f64 + 1.0)).collect();
    assert!(rel_error(&y.to_vec().unwrap(), &want) < 1e-6, "seed {seed}");
    for r in &reuse {
        assert!(r.to_vec().unwrap().iter().all(|&v| v == 7.0));
    }
}

#[test]
fn graphs_patch_kernel_arguments() {
    let Some(ctx) = gpu!("graphs_patch_kernel_arguments") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let fill = ctx.kernel("fill_f32").unwrap();
    let n = 3000usize;
    let a = poisoned(&s, n);
    let b = poisoned(&s, n);
    let v = 1.0f32;
    let cfg = LaunchConfig::for_num_elems(n as u32);
    let mut g = s
        .capture(|s| {
            // SAFETY: fill_f32(float* out, float value, size_t n); `a` holds n floats.
            unsafe { s.launch_builder(&fill).arg(&a).arg(&v).arg(&n).launch(cfg) }
        })
        .unwrap();
    let nodes = g.kernel_nodes().unwrap();
    assert_eq!(nodes.len(), 1);
    assert_eq!(nodes[0].block_dim, cfg.block_dim);
    if let Some(name) = &nodes[0].name {
        assert_eq!(name, "fill_f32");
    }
    let w: f32 = Rng::new(seed()).vec(1, -5.0, 5.0)[0];
    // SAFETY: the same kernel and parameter types; `b` holds n floats.
    unsafe { g.set_kernel_args(0, &fill, &[&b, &w, &n]).unwrap() };
    g.launch(&s).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![w; n]);
    assert!(
        a.to_vec().unwrap().iter().all(|v| v.is_nan()),
        "the old target was written"
    );
    // Bad patches are refused and change nothing.
    // SAFETY: refused before the driver is called.
    let e = unsafe { g.set_kernel_args(1, &fill, &[&a, &w, &n]) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("no node 1"), "{e}");
    let other = ctx.kernel("fill_f64").unwrap();
    // SAFETY: refused before the driver is called.
    let e = unsafe { g.set_kernel_args(0, &other, &[&a, &1.0f64, &n]) }
        .unwrap_err()
        .to_string();
    assert!(e.contains("fill_f64"), "{e}");
    if fill.param_sizes().is_some() {
        // SAFETY: refused before the driver is called (2 arguments for 3 parameters).
        let e = unsafe { g.set_kernel_args(0, &fill, &[&a, &w]) }
            .unwrap_err()
            .to_string();
        assert!(e.contains("3 parameters"), "{e}");
    }
    ops::fill(&mut DeviceBuffer::<f32>::zeroed(&s, 1).unwrap(), 0.0).unwrap();
    g.launch(&s).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![w; n]);
    // After an in-place update (a shorter grid: n / 2 elements) patches still reach the
    // instantiated graph, with the updated launch shape.
    let half = n / 2;
    let how = g
        .update(&s, |s| {
            // SAFETY: as above, over the first half of `a`.
            unsafe {
                s.launch_builder(&fill)
                    .arg(&a)
                    .arg(&v)
                    .arg(&half)
                    .launch(LaunchConfig::for_num_elems(half as u32))
            }
        })
        .unwrap();
    assert!(how.in_place(), "{how:?}");
    assert_eq!(
        g.kernel_nodes().unwrap()[0].grid_dim,
        LaunchConfig::for_num_elems(half as u32).grid_dim
    );
    let w2 = w + 1.0;
    // SAFETY: the same kernel and parameter types; `b` holds n >= half floats.
    unsafe { g.set_kernel_args(0, &fill, &[&b, &w2, &half]).unwrap() };
    g.launch(&s).unwrap();
    let got = b.to_vec().unwrap();
    assert_eq!(&got[..half], &vec![w2; half][..]);
    assert_eq!(&got[half..], &vec![w; n - half][..]);
    assert!(
        a.to_vec().unwrap().iter().all(|v| v.is_nan()),
        "the old target was written"
    );
}

/// The stream still does ordinary work after a capture failed.
fn assert_usable(s: &Arc<Stream>, seed: u64) {
    assert!(!s.is_capturing());
    let xs = random(5000, seed);
    let mut x = DeviceBuffer::from_slice(s, &xs).unwrap();
    ops::scale_in_place(&mut x, 2.0).unwrap();
    s.synchronize().unwrap();
    let want: Vec<f64> = xs.iter().map(|&v| 2.0 * v as f64).collect();
    assert!(rel_error(&x.to_vec().unwrap(), &want) < 1e-6);
}

#[test]
fn graphs_failed_captures_are_clear_and_the_stream_recovers() {
    let Some(ctx) = gpu!("graphs_failed_captures_are_clear_and_the_stream_recovers") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = seed();
    let mut x = DeviceBuffer::from_slice(&s, &random(1000, seed)).unwrap();
    // A copy to the host inside the capture.
    let e = s
        .capture(|_| {
            ops::scale_in_place(&mut x, 2.0)?;
            x.to_vec().map(|_| ())
        })
        .unwrap_err();
    assert!(matches!(e, Error::Capture { .. }), "{e}");
    assert!(e.to_string().contains("waits for the device"), "{e}");
    assert_usable(&s, seed);
    // A synchronize inside the capture.
    let e = s.capture(|s| s.synchronize()).unwrap_err();
    assert!(matches!(e, Error::Capture { .. }), "{e}");
    assert_usable(&s, seed ^ 2);
    // The closure's own error comes back, wrapped, and the capture is discarded.
    let e = s
        .capture(|_| {
            ops::scale_in_place(&mut x, 2.0)?;
            Err(Error::InvalidArgument("stop here".into()))
        })
        .unwrap_err();
    assert!(e.to_string().contains("stop here"), "{e}");
    assert_usable(&s, seed ^ 3);
    // A panic inside the capture ends it too.
    let caught = std::panic::catch_unwind(std::panic::AssertUnwindSafe(|| {
        let _ = s.capture(|_| panic!("inside the capture"));
    }));
    assert!(caught.is_err());
    assert_usable(&s, seed ^ 4);
    // Misuse of begin/end.
    s.begin_capture().unwrap();
    let e = s.begin_capture().unwrap_err().to_string();
    assert!(e.contains("already capturing"), "{e}");
    let g = s.end_capture().unwrap();
    assert_eq!(g.node_count().unwrap(), 0);
    let e = s.end_capture().unwrap_err().to_string();
    assert!(e.contains("not capturing"), "{e}");
    let e = ctx.default_stream().capture(|_| Ok(())).unwrap_err().to_string();
    assert!(e.contains("cannot be captured"), "{e}");
    // A buffer allocated inside the capture that is larger than anything cached (a fresh
    // segment from the driver) works, and a reduction's read-back does not.
    let big = 48 << 20;
    let mut out = poisoned(&s, 1);
    let g = s
        .capture(|_| {
            let mut t = DeviceBuffer::<f32>::zeroed(x.stream(), big)?;
            ops::fill(&mut t, 0.25)?;
            ops::scale(&mut out, 4.0, &t.slice(0..1)?)
        })
        .unwrap();
    g.launch(&s).unwrap();
    assert_eq!(out.to_vec().unwrap(), vec![1.0]);
    let e = s.capture(|_| ops::sum(&x).map(|_| ())).unwrap_err();
    assert!(matches!(e, Error::Capture { .. }), "{e}");
    assert_usable(&s, seed ^ 5);
}

#[test]
fn graphs_work_on_another_stream_during_a_capture() {
    let Some(ctx) = gpu!("graphs_work_on_another_stream_during_a_capture") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let other = ctx.new_stream().unwrap();
    let seed = seed();
    let xs = random(4096, seed);
    let mut y = DeviceBuffer::from_slice(&s, &xs).unwrap();
    let mut z = DeviceBuffer::<f32>::zeroed(&other, xs.len()).unwrap();
    // Work queued on another stream that reads what the capture wrote: that stream joins the
    // capture and is never joined back. A clear error, and both streams work afterwards.
    let e = s
        .capture(|_| {
            ops::scale_in_place(&mut y, 2.0)?;
            ops::axpy(&mut z, 1.0, &y)
        })
        .unwrap_err();
    assert!(matches!(e, Error::Capture { .. }), "{e}");
    assert!(e.to_string().contains("another stream"), "{e}");
    assert_usable(&s, seed ^ 7);
    assert_usable(&other, seed ^ 8);
    // A buffer of another stream read inside the capture: either recorded (and then right on
    // every replay) or refused clearly; never a wrong result or a stuck stream.
    let x_other = DeviceBuffer::from_slice(&other, &xs).unwrap();
    other.synchronize().unwrap();
    let mut w = DeviceBuffer::<f32>::zeroed(&s, xs.len()).unwrap();
    match s.capture(|_| ops::axpy(&mut w, 3.0, &x_other)) {
        Ok(g) => {
            g.launch(&s).unwrap();
            g.launch(&s).unwrap();
            let want: Vec<f64> = xs.iter().map(|&v| 6.0 * v as f64).collect();
            assert!(rel_error(&w.to_vec().unwrap(), &want) < 1e-6, "seed {seed}");
        }
        Err(e) => assert!(matches!(e, Error::Capture { .. }), "{e}"),
    }
    assert_usable(&s, seed ^ 9);
    assert_usable(&other, seed ^ 10);
}

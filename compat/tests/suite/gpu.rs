//! On the GPU: contexts, copies and slices, launches with 2-15 arguments and user structs,
//! views, streams and events, graphs, pinned memory, module globals, invalid launches.

use super::*;

#[test]
fn context_basics() {
    let Some(ctx) = gpu("context_basics") else { return };
    assert!(CudaContext::device_count().unwrap() >= 1);
    assert_eq!(ctx.ordinal(), 0);
    assert!(!ctx.name().unwrap().is_empty());
    let (major, minor) = ctx.compute_capability().unwrap();
    let sms = ctx
        .attribute(sys::CUdevice_attribute::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)
        .unwrap();
    assert!(sms > 0);
    ctx.bind_to_thread().unwrap();
    ctx.synchronize().unwrap();
    let s = ctx.new_stream().unwrap();
    assert!(Arc::ptr_eq(s.context(), &ctx) || **s.context() == *ctx);
    checksum("context_basics", [(major * 10 + minor) as f64, sms as f64]);
}

#[test]
#[allow(deprecated)]
fn copies_and_slices() {
    let Some(ctx) = gpu("copies_and_slices") else { return };
    let stream = ctx.default_stream();
    let host: Vec<f32> = inputs(1000, 1).into_iter().map(|v| v as f32).collect();
    let a = stream.memcpy_stod(&host).unwrap();
    assert_eq!(a.len(), 1000);
    assert_eq!(stream.memcpy_dtov(&a).unwrap(), host);
    let b = stream.clone_htod(&host[..500]).unwrap();
    assert_eq!(stream.clone_dtoh(&b).unwrap(), &host[..500]);
    // memcpy_htod into a view, memcpy_dtoh into an array.
    let mut c = stream.alloc_zeros::<f32>(8).unwrap();
    stream
        .memcpy_htod(&[1.0f32, 2.0, 3.0, 4.0], &mut c.slice_mut(2..6))
        .unwrap();
    let mut arr = [0.0f32; 8];
    stream.memcpy_dtoh(&c, &mut arr).unwrap();
    assert_eq!(arr, [0.0, 0.0, 1.0, 2.0, 3.0, 4.0, 0.0, 0.0]);
    // dtod and clones.
    let mut d = stream.alloc_zeros::<f32>(1000).unwrap();
    stream.memcpy_dtod(&a, &mut d).unwrap();
    let e = stream.clone_dtod(&d.slice(100..200)).unwrap();
    assert_eq!(stream.clone_dtoh(&e).unwrap(), &host[100..200]);
    let f = d.try_clone().unwrap();
    stream.memset_zeros(&mut d).unwrap();
    assert!(stream.clone_dtoh(&d).unwrap().iter().all(|&v| v == 0.0));
    assert_eq!(stream.clone_dtoh(&f).unwrap(), host);
    // split_at, transmute, leak/upgrade.
    let (left, right) = f.split_at(400);
    assert_eq!((left.len(), right.len()), (400, 600));
    assert_eq!(stream.clone_dtoh(&right.slice(..2)).unwrap(), &host[400..402]);
    // SAFETY: any f32 bit pattern is a valid u32.
    let bits = unsafe { f.transmute::<u32>(1000) }.unwrap();
    assert_eq!(stream.clone_dtoh(&bits).unwrap()[0], host[0].to_bits());
    // SAFETY: as above; more bytes than the slice has is refused.
    assert!(unsafe { f.transmute::<u64>(501) }.is_none());
    assert!(f.try_slice(999..1001).is_none());
    let n = f.len();
    let raw = f.leak();
    // SAFETY: the pointer came from leak with n elements.
    let g: CudaSlice<f32> = unsafe { stream.upgrade_device_ptr(raw, n) };
    assert_eq!(stream.clone_dtoh(&g).unwrap(), host);
    let v: Vec<f32> = g.try_into().unwrap();
    checksum(
        "copies_and_slices",
        v.iter().map(|&x| x as f64).chain(arr.iter().map(|&x| x as f64)),
    );
}

#[derive(Clone, Copy)]
enum Val {
    I32(i32),
    F32(f32),
    F64(f64),
    U64(u64),
    I16(i16),
    U8(u8),
    I64(i64),
}

impl Val {
    fn nth(k: usize) -> Val {
        let x = k as i64 + 1;
        match k % 7 {
            0 => Val::I32(-3 * x as i32),
            1 => Val::F32(1.5 * x as f32),
            2 => Val::F64(0.25 * x as f64),
            3 => Val::U64(1_000_000_007 * x as u64),
            4 => Val::I16(-(x as i16)),
            5 => Val::U8(200 + x as u8),
            _ => Val::I64(-1_000_000_000_000 * x),
        }
    }
    fn c_type(&self) -> &'static str {
        match self {
            Val::I32(_) => "int",
            Val::F32(_) => "float",
            Val::F64(_) => "double",
            Val::U64(_) => "unsigned long long",
            Val::I16(_) => "short",
            Val::U8(_) => "unsigned char",
            Val::I64(_) => "long long",
        }
    }
    fn as_f64(&self) -> f64 {
        match *self {
            Val::I32(v) => v as f64,
            Val::F32(v) => v as f64,
            Val::F64(v) => v,
            Val::U64(v) => v as f64,
            Val::I16(v) => v as f64,
            Val::U8(v) => v as f64,
            Val::I64(v) => v as f64,
        }
    }
}

/// Launches with 2 to 15 arguments: a device pointer and 1 to 14 scalars of mixed types, all
/// passed by reference to the builder.
#[test]
fn builder_launches_with_2_to_15_args() {
    let Some(ctx) = gpu("builder_launches_with_2_to_15_args") else {
        return;
    };
    let mut src = String::new();
    for total in 2..=15usize {
        let vals: Vec<Val> = (0..total - 1).map(Val::nth).collect();
        let params: Vec<String> = vals
            .iter()
            .enumerate()
            .map(|(i, v)| format!("{} a{i}", v.c_type()))
            .collect();
        let sum: Vec<String> = (0..vals.len()).map(|i| format!("(double)a{i}")).collect();
        src += &format!(
            "extern \"C\" __global__ void args{total}(double *out, {}) {{ out[{total}] = {}; }}\n",
            params.join(", "),
            sum.join(" + ")
        );
    }
    let Some(ptx) = compiled("builder_launches_with_2_to_15_args", || compile_ptx(&src)) else {
        return;
    };
    let module = ctx.load_module(ptx).unwrap();
    let stream = ctx.new_stream().unwrap();
    let mut out = stream.alloc_zeros::<f64>(16).unwrap();
    let one = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (1, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut expected = [0.0f64; 16];
    for (total, expect) in expected.iter_mut().enumerate().skip(2) {
        let f = module.load_function(&format!("args{total}")).unwrap();
        let vals: Vec<Val> = (0..total - 1).map(Val::nth).collect();
        *expect = vals.iter().map(Val::as_f64).sum();
        let mut b = stream.launch_builder(&f);
        b.arg(&mut out);
        for v in &vals {
            match v {
                Val::I32(x) => b.arg(x),
                Val::F32(x) => b.arg(x),
                Val::F64(x) => b.arg(x),
                Val::U64(x) => b.arg(x),
                Val::I16(x) => b.arg(x),
                Val::U8(x) => b.arg(x),
                Val::I64(x) => b.arg(x),
            };
        }
        // SAFETY: argsN(double*, ...) takes exactly these arguments in this order.
        unsafe { b.launch(one) }.unwrap();
    }
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(got[..], expected[..], "argsN results at index N");
    checksum("builder_launches_with_2_to_15_args", got);
}

#[test]
fn user_struct_device_repr() {
    let Some(kit) = Kit::new("user_struct_device_repr") else {
        return;
    };
    let n = 3000usize;
    let host: Vec<f32> = inputs(n, 2).into_iter().map(|v| v as f32).collect();
    let input = kit.stream.clone_htod(&host).unwrap();
    let mut out = kit.stream.alloc_zeros::<f32>(n).unwrap();
    let p = Params {
        n: n as u32,
        scale: 2.5,
        offset: -0.75,
    };
    let f = kit.f("affine");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&p).arg(&input).arg(&mut out);
    // SAFETY: affine(Params, const float*, float*), n elements each.
    unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = kit.stream.clone_dtoh(&out).unwrap();
    for i in 0..n {
        let want = (host[i] as f64 * 2.5 - 0.75) as f32;
        assert!(
            (got[i] - want).abs() <= 1e-6 * (1.0 + want.abs()),
            "{i}: {} vs {want}",
            got[i]
        );
    }
    // A slice of structs.
    let ps: Vec<Params> = (0..64)
        .map(|i| Params {
            n: i,
            scale: 0.5,
            offset: i as f64,
        })
        .collect();
    let dev = kit.stream.clone_htod(&ps).unwrap();
    let zeros = kit.stream.alloc_zeros::<Params>(2).unwrap();
    assert_eq!(kit.stream.clone_dtoh(&zeros).unwrap(), vec![Params::default(); 2]);
    let mut out2 = kit.stream.alloc_zeros::<f32>(64).unwrap();
    let count = 64i32;
    let f = kit.f("affine_many");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&dev).arg(&mut out2).arg(&count);
    // SAFETY: affine_many(const Params*, float*, int).
    unsafe { b.launch(LaunchConfig::for_num_elems(64)) }.unwrap();
    let got2 = kit.stream.clone_dtoh(&out2).unwrap();
    assert_eq!(got2[10], 15.0);
    checksum("user_struct_device_repr", got.iter().chain(&got2).map(|&x| x as f64));
}

#[test]
fn launches_with_views() {
    let Some(kit) = Kit::new("launches_with_views") else {
        return;
    };
    let n = 2048usize;
    let mut y = kit.stream.alloc_zeros::<f32>(n).unwrap();
    let x = kit.stream.clone_htod(&vec![1.0f32; n]).unwrap();
    let f = kit.f("axpy");
    let half = (n / 2) as i32;
    {
        let (mut lo, mut hi) = y.split_at_mut(n / 2);
        let xv = x.slice(..n / 2);
        let (a_lo, a_hi) = (2.0f32, 3.0f32);
        let mut b = kit.stream.launch_builder(&f);
        b.arg(&mut lo).arg(&xv).arg(&a_lo).arg(&half);
        // SAFETY: axpy(float*, const float*, float, int) over n/2 elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(half as u32)) }.unwrap();
        let xv2 = x.slice(n / 2..);
        let mut b = kit.stream.launch_builder(&f);
        b.arg(&mut hi).arg(&xv2).arg(&a_hi).arg(&half);
        // SAFETY: as above.
        unsafe { b.launch(LaunchConfig::for_num_elems(half as u32)) }.unwrap();
    }
    let got = kit.stream.clone_dtoh(&y).unwrap();
    assert!(got[..n / 2].iter().all(|&v| v == 2.0));
    assert!(got[n / 2..].iter().all(|&v| v == 3.0));
    checksum("launches_with_views", got.iter().map(|&v| v as f64));
}

#[test]
fn streams_events_and_cross_stream_use() {
    let Some(kit) = Kit::new("streams_events_and_cross_stream_use") else {
        return;
    };
    let s1 = kit.ctx.new_stream().unwrap();
    let s2 = s1.fork().unwrap();
    let n = 1 << 20;
    let mut x = s1.alloc_zeros::<f32>(n).unwrap();
    let f = kit.f("inc");
    let ni = n as i32;
    let start = s2.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    // x belongs to s1 but is incremented on s2, three times.
    for _ in 0..3 {
        let mut b = s2.launch_builder(&f);
        b.arg(&mut x).arg(&ni);
        // SAFETY: inc(float*, int) over n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    }
    let end = s2.record_event(Some(sys::CUevent_flags::CU_EVENT_DEFAULT)).unwrap();
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms >= 0.0);
    // Back on s1: join, then one more increment there.
    s1.join(&s2).unwrap();
    let ev = s2.record_event(None).unwrap();
    s1.wait(&ev).unwrap();
    let mut b = s1.launch_builder(&f);
    b.arg(&mut x).arg(&ni);
    // SAFETY: as above.
    unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let got = s1.clone_dtoh(&x).unwrap();
    assert!(got.iter().all(|&v| v == 4.0), "{}", got[0]);
    ev.synchronize().unwrap();
    s2.synchronize().unwrap();
    checksum(
        "streams_events_and_cross_stream_use",
        got.iter().step_by(1024).map(|&v| v as f64),
    );
}

#[test]
fn graph_capture_and_replay() {
    let Some(kit) = Kit::new("graph_capture_and_replay") else {
        return;
    };
    // cudarc's own idiom (its test_end_capture_flags): with all accesses on one stream, switch
    // per-slice event tracking off before creating the stream and the buffers, so that no launch
    // inside the capture waits on an event recorded outside it. A no-op in compat, which has no
    // per-slice events.
    // SAFETY: every access to `x` below is on `stream`.
    unsafe { kit.ctx.disable_event_tracking() };
    let stream = kit.ctx.new_stream().unwrap();
    let n = 4096usize;
    let mut x = stream.alloc_zeros::<f32>(n).unwrap();
    stream.synchronize().unwrap();
    let f = kit.f("inc");
    let ni = n as i32;
    stream
        .begin_capture(sys::CUstreamCaptureMode::CU_STREAM_CAPTURE_MODE_THREAD_LOCAL)
        .unwrap();
    for _ in 0..2 {
        let mut b = stream.launch_builder(&f);
        b.arg(&mut x).arg(&ni);
        // SAFETY: inc(float*, int) over n elements.
        unsafe { b.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    }
    let graph = stream
        .end_capture(sys::CUgraphInstantiate_flags::CUDA_GRAPH_INSTANTIATE_FLAG_AUTO_FREE_ON_LAUNCH)
        .unwrap()
        .expect("a graph");
    graph.launch().unwrap();
    graph.launch().unwrap();
    let got = stream.clone_dtoh(&x).unwrap();
    assert!(got.iter().all(|&v| v == 4.0), "{}", got[0]);
    checksum("graph_capture_and_replay", got.iter().map(|&v| v as f64));
}

#[test]
fn pinned_host_memory() {
    let Some(ctx) = gpu("pinned_host_memory") else { return };
    let stream = ctx.new_stream().unwrap();
    let n = 1 << 16;
    // SAFETY: written below before it is read.
    let mut pinned = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    for (i, v) in pinned.as_mut_slice().unwrap().iter_mut().enumerate() {
        *v = i as f32 * 0.5;
    }
    let dev = stream.clone_htod(&pinned).unwrap();
    // SAFETY: written by the copy below before it is read.
    let mut back = unsafe { ctx.alloc_pinned::<f32>(n) }.unwrap();
    stream.memcpy_dtoh(&dev, &mut back).unwrap();
    let got = back.as_slice().unwrap();
    assert_eq!(got[1000], 500.0);
    assert_eq!(pinned.len(), n);
    checksum("pinned_host_memory", got.iter().map(|&v| v as f64));
}

#[test]
fn module_globals_and_function_attributes() {
    let Some(kit) = Kit::new("module_globals_and_function_attributes") else {
        return;
    };
    let stream = kit.ctx.new_stream().unwrap();
    {
        let mut coeff = kit.module.get_global("coeff", &stream).unwrap();
        assert_eq!(coeff.len(), 16);
        let bytes: Vec<u8> = [1.0f32, 2.0, 3.0, 4.0].iter().flat_map(|v| v.to_le_bytes()).collect();
        stream.memcpy_htod(&bytes, &mut coeff).unwrap();
    }
    let n = 64i32;
    let mut out = stream.alloc_zeros::<f32>(64).unwrap();
    let f = kit.f("use_coeff");
    let mut b = stream.launch_builder(&f);
    b.arg(&mut out).arg(&n);
    // SAFETY: use_coeff(float*, int) over 64 elements.
    unsafe { b.launch(LaunchConfig::for_num_elems(64)) }.unwrap();
    let got = stream.clone_dtoh(&out).unwrap();
    assert_eq!(got[5], 2.0 * 5.0);
    let regs = f.num_regs().unwrap();
    let max_threads = f.max_threads_per_block().unwrap();
    assert!(max_threads >= 32);
    let blocks = f.occupancy_max_active_blocks_per_multiprocessor(256, 0, None).unwrap();
    assert!(blocks >= 1);
    let attr = f
        .get_attribute(sys::CUfunction_attribute::CU_FUNC_ATTRIBUTE_MAX_THREADS_PER_BLOCK)
        .unwrap();
    assert_eq!(attr, max_threads);
    assert!(regs > 0);
    checksum("module_globals_and_function_attributes", got.iter().map(|&v| v as f64));
}

#[test]
fn invalid_launch_is_an_error() {
    let Some(kit) = Kit::new("invalid_launch_is_an_error") else {
        return;
    };
    let mut x = kit.stream.alloc_zeros::<f32>(4).unwrap();
    let n = 4i32;
    let f = kit.f("inc");
    let mut b = kit.stream.launch_builder(&f);
    b.arg(&mut x).arg(&n);
    let cfg = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (2048, 1, 1),
        shared_mem_bytes: 0,
    };
    // SAFETY: the arguments match; the configuration is rejected before the kernel runs.
    let err = unsafe { b.launch(cfg) }.unwrap_err();
    assert_eq!(err, DriverError(sys::CUresult::CUDA_ERROR_INVALID_VALUE));
    say("CHECKSUM invalid_launch_is_an_error CUDA_ERROR_INVALID_VALUE".into());
    kit.stream.synchronize().unwrap();
}

//! GPU tests of the runtime: devices, contexts, streams, events, memory, modules, launches.
//! Each skips visibly without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::selftest::Rng;
use cudrv::{
    Context, Device, DeviceBuffer, DeviceRepr, DeviceSlice, DeviceSliceMut, Error, Event, LaunchConfig, Module,
    PinnedHostBuffer,
};

fn random(n: usize, seed: u64) -> Vec<f32> {
    Rng::new(seed).vec(n, -100.0, 100.0)
}

/// Runs the test module's `test_add_one` over `n` random values and checks every one.
fn check_add_one(s: &Arc<cudrv::Stream>, f: &cudrv::Function, n: usize, seed: u64) {
    let data = random(n, seed);
    let x = DeviceBuffer::from_slice(s, &data).unwrap();
    let mut l = s.launch_builder(f);
    l.arg(&x).arg(&n);
    // SAFETY: test_add_one(float*, u64) matches; n elements exist.
    unsafe { l.launch(LaunchConfig::for_num_elems(n as u32)) }.unwrap();
    let want: Vec<f32> = data.iter().map(|v| v + 1.0).collect();
    assert_eq!(x.to_vec().unwrap(), want);
}

#[test]
fn device_reports_identity_and_limits() {
    let Some(ctx) = gpu!("device_reports_identity_and_limits") else {
        return;
    };
    assert!(Device::count().unwrap() >= 1);
    let dev = ctx.device();
    assert!(!dev.name().unwrap().is_empty());
    assert!(dev.compute_capability().unwrap() >= (8, 0));
    assert!(dev.total_memory().unwrap() > 1 << 30);
    assert_ne!(dev.uuid().unwrap(), [0u8; 16]);
    assert!(dev.uuid_string().unwrap().starts_with("GPU-"));
    let l = ctx.limits();
    assert_eq!(l.max_threads_per_block, 1024);
    assert_eq!(l.warp_size, 32);
    assert!(l.multiprocessor_count > 0 && l.max_shared_per_block_optin >= l.max_shared_per_block);
    let (free, total) = ctx.memory_info().unwrap();
    assert!(free > 0 && free <= total);
    assert!(cudrv::driver_version().unwrap().major() >= 12);
    let past = Device::count().unwrap();
    let e = Device::get(past).unwrap_err().to_string();
    assert!(e.contains(&format!("device {past} requested")), "{e}");
}

#[test]
fn contexts_share_the_primary_context_across_threads() {
    let Some(ctx) = gpu!("contexts_share_the_primary_context_across_threads") else {
        return;
    };
    let again = Context::new(0).unwrap();
    assert_eq!(ctx.raw(), again.raw());
    let c = ctx.clone();
    std::thread::spawn(move || {
        let stream = c.new_stream().unwrap();
        let buf = DeviceBuffer::from_slice(&stream, &[1u32, 2, 3]).unwrap();
        assert_eq!(buf.to_vec().unwrap(), vec![1, 2, 3]);
    })
    .join()
    .unwrap();
    fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<Arc<Context>>();
    assert_send_sync::<cudrv::Stream>();
    assert_send_sync::<DeviceBuffer<f32>>();
}

#[test]
fn streams_events_and_timing() {
    let Some(ctx) = gpu!("streams_events_and_timing") else {
        return;
    };
    let (least, greatest) = ctx.stream_priority_range().unwrap();
    let hi = ctx.new_stream_with(cudrv::StreamFlags::NonBlocking, greatest).unwrap();
    assert_eq!(hi.priority().unwrap(), greatest);
    let lo = ctx.new_stream_with(cudrv::StreamFlags::Default, least).unwrap();
    let start = Event::new(&ctx, true).unwrap();
    let end = Event::new(&ctx, true).unwrap();
    let n = 1 << 24;
    let mut x = DeviceBuffer::<f32>::zeroed(&hi, n).unwrap();
    start.record(&hi).unwrap();
    cudrv::ops::fill(&mut x, 3.0f32).unwrap();
    end.record(&hi).unwrap();
    // lo waits for hi's work through the event, then reads x on its own stream.
    lo.wait(&end).unwrap();
    end.synchronize().unwrap();
    assert!(end.query().unwrap());
    let ms = start.elapsed_ms(&end).unwrap();
    assert!(ms > 0.0 && ms < 1000.0, "{ms}");
    hi.synchronize().unwrap();
    assert!(hi.query().unwrap());
    assert_eq!(cudrv::ops::sum(&x).unwrap(), 3.0 * n as f32);
    let default = ctx.default_stream();
    assert!(default.raw().is_null());
    default.synchronize().unwrap();
}

#[test]
fn buffers_round_trip_views_and_copies() {
    let Some(ctx) = gpu!("buffers_round_trip_views_and_copies") else {
        return;
    };
    let s1 = ctx.new_stream().unwrap();
    let s2 = ctx.new_stream().unwrap();
    let data = random(100_003, 1);
    let buf = DeviceBuffer::from_slice(&s1, &data).unwrap();
    assert_eq!(buf.len(), data.len());
    assert_eq!(buf.num_bytes(), data.len() * 4);
    assert_eq!(buf.to_vec().unwrap(), data);

    // Sub-range views read and write exactly their range.
    let view = buf.slice(10..20).unwrap();
    assert_eq!(view.to_vec().unwrap(), data[10..20]);
    assert_eq!(view.slice(5..).unwrap().to_vec().unwrap(), data[15..20]);
    let mut copy = buf.try_clone().unwrap();
    {
        let mut part = copy.slice_mut(100..200).unwrap();
        part.memset_zero().unwrap();
        let (mut left, right) = part.split_at_mut(50).unwrap();
        left.copy_from_slice(&[7.0; 50]).unwrap();
        assert_eq!(right.to_vec().unwrap(), vec![0.0; 50]);
    }
    let mut want = data.clone();
    want[100..150].fill(7.0);
    want[150..200].fill(0.0);
    assert_eq!(copy.to_vec().unwrap(), want);

    // Device-to-device across streams orders itself after the source's stream.
    let mut other = DeviceBuffer::<f32>::zeroed(&s2, data.len()).unwrap();
    other.copy_from_device(&copy).unwrap();
    assert_eq!(other.to_vec().unwrap(), want);

    // memset with a byte pattern.
    let mut bytes = DeviceBuffer::<u8>::zeroed(&s1, 1001).unwrap();
    bytes.memset_bytes(0xAB).unwrap();
    assert!(bytes.to_vec().unwrap().iter().all(|&b| b == 0xAB));

    // Empty buffers work without touching the driver's allocator.
    let empty = DeviceBuffer::<f64>::from_slice(&s1, &[]).unwrap();
    assert!(empty.is_empty() && empty.to_vec().unwrap().is_empty());
}

#[test]
fn wrong_lengths_and_ranges_are_errors_that_change_nothing() {
    let Some(ctx) = gpu!("wrong_lengths_and_ranges_are_errors_that_change_nothing") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let data = random(64, 2);
    let mut buf = DeviceBuffer::from_slice(&s, &data).unwrap();
    let e = buf.copy_from_slice(&[1.0; 63]).unwrap_err();
    assert!(matches!(e, Error::InvalidArgument(_)));
    assert!(e.to_string().contains("64") && e.to_string().contains("63"), "{e}");
    let mut host = vec![-1.0f32; 65];
    assert!(buf.copy_to_slice(&mut host).is_err());
    assert!(host.iter().all(|&x| x == -1.0), "a failed copy wrote to the host slice");
    let small = DeviceBuffer::<f32>::zeroed(&s, 10).unwrap();
    assert!(buf.copy_from_device(&small).is_err());
    assert_eq!(buf.to_vec().unwrap(), data, "a failed copy changed the device buffer");
    let e = buf.slice(60..65).unwrap_err().to_string();
    assert!(e.contains("60..65") && e.contains("64 elements"), "{e}");
    // ops check shapes before launching.
    let mut out = DeviceBuffer::from_slice(&s, &data).unwrap();
    assert!(cudrv::ops::add(&mut out, &small, &buf).is_err());
    assert!(cudrv::ops::transpose(&mut out, &buf, 7, 9).is_err());
    assert_eq!(out.to_vec().unwrap(), data);
    // A buffer too large for usize arithmetic is refused before the driver is asked.
    // SAFETY: never read; the call must fail.
    assert!(unsafe { DeviceBuffer::<f64>::uninit(&s, usize::MAX / 4) }.is_err());
}

#[test]
fn out_of_memory_is_an_error() {
    let Some(ctx) = gpu!("out_of_memory_is_an_error") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let (_, total) = ctx.memory_info().unwrap();
    for caching in [true, false] {
        ctx.set_caching(caching);
        // SAFETY: never read; the allocation must fail.
        let e = unsafe { DeviceBuffer::<u8>::uninit(&s, total * 2) }.unwrap_err();
        match &e {
            Error::OutOfMemory {
                requested, device_free, ..
            } => assert!(*requested == total * 2 && *device_free > 0, "{e}"),
            other => panic!("expected OutOfMemory, got {other:?}"),
        }
        assert!(e.to_string().contains(&format!("requested {} bytes", total * 2)), "{e}");
    }
    ctx.set_caching(true);
    // The context still works afterwards.
    let b = DeviceBuffer::from_slice(&s, &[1.0f32]).unwrap();
    assert_eq!(b.to_vec().unwrap(), vec![1.0]);
}

#[test]
fn pinned_buffers_copy_asynchronously() {
    let Some(ctx) = gpu!("pinned_buffers_copy_asynchronously") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let data = random(1 << 20, 3);
    let mut host = PinnedHostBuffer::<f32>::new(&ctx, data.len()).unwrap();
    assert!(host.as_slice().unwrap().iter().all(|&x| x == 0.0));
    host.as_mut_slice().unwrap().copy_from_slice(&data);
    let mut dev = DeviceBuffer::<f32>::zeroed(&s, data.len()).unwrap();
    dev.copy_from_pinned_async(&host).unwrap();
    let mut back = PinnedHostBuffer::<f32>::new(&ctx, data.len()).unwrap();
    dev.copy_to_pinned_async(&mut back).unwrap();
    // as_slice waits for the pending copy.
    assert_eq!(back.as_slice().unwrap(), &data[..]);
    let mut short = PinnedHostBuffer::<f32>::new(&ctx, 3).unwrap();
    assert!(dev.copy_to_pinned_async(&mut short).is_err());
}

#[test]
fn modules_load_from_text_file_and_directory() {
    let Some(ctx) = gpu!("modules_load_from_text_file_and_directory") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let m = Module::from_ptx(&ctx, gpu::TEST_PTX, "test_kernels").unwrap();
    let f = m.function("test_add_one").unwrap();
    let a = f.attributes();
    assert!(a.max_threads_per_block >= 256 && a.num_regs > 0);
    assert_eq!(a.ptx_version, 80);
    let blocks = f.max_active_blocks_per_multiprocessor(256, 0).unwrap();
    assert!(blocks >= 1);
    let (grid, block) = f.max_potential_block_size(0).unwrap();
    assert!(grid >= 1 && block >= 32);
    let (ptr, bytes) = m.global("test_counter").unwrap();
    assert!(ptr != 0 && bytes == 4);
    assert!(m.global("no_such_global").is_err());
    match m.function("no_such_kernel") {
        Err(Error::UnknownKernel { name, .. }) => assert_eq!(name, "no_such_kernel"),
        other => panic!("expected UnknownKernel, got {other:?}"),
    }

    check_add_one(&s, &f, 1000, 4);

    // From a file and from a directory, through the registry.
    let dir = std::env::temp_dir().join(format!("cudrv-ptx-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(dir.join("mine.ptx"), gpu::TEST_PTX).unwrap();
    Module::from_file(&ctx, dir.join("mine.ptx"))
        .unwrap()
        .function("test_struct_arg")
        .unwrap();
    let names = ctx.registry().register_ptx_dir(&dir).unwrap();
    assert_eq!(names, vec!["test_add_one".to_string(), "test_struct_arg".to_string()]);
    ctx.kernel("test_struct_arg").unwrap();
    std::fs::remove_dir_all(&dir).unwrap();
    assert!(matches!(
        Module::from_file(&ctx, dir.join("gone.ptx")),
        Err(Error::Io { .. })
    ));
}

/// The test module assembled by ptxas 12.0 for sm_90 (`ptxas -arch=sm_90 test_kernels.ptx`).
const TEST_CUBIN_SM90: &[u8] = include_bytes!("data/test_kernels.sm_90.cubin");
/// The same module as a fatbin, made by nvcc 13.0 (`nvcc -fatbin -arch=sm_90 test_kernels.ptx`).
const TEST_FATBIN_SM90: &[u8] = include_bytes!("data/test_kernels.sm_90.fatbin");

#[test]
fn cubin_images_load_and_run() {
    let Some(ctx) = gpu::sm90("cubin_images_load_and_run", "the images are sm_90 cubin and fatbin") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let m = Module::from_image(&ctx, TEST_CUBIN_SM90, "test_kernels.cubin").unwrap();
    let f = m.function("test_add_one").unwrap();
    assert_eq!(f.attributes().binary_version, 90);
    check_add_one(&s, &f, 777, 6);
    // From a file too.
    let path = std::env::temp_dir().join(format!("cudrv-{}.cubin", std::process::id()));
    std::fs::write(&path, TEST_CUBIN_SM90).unwrap();
    Module::from_file(&ctx, &path)
        .unwrap()
        .function("test_struct_arg")
        .unwrap();
    std::fs::remove_file(&path).unwrap();
    // A fatbin (made by `nvcc -fatbin -arch=sm_90` from the same PTX) loads the same way.
    let fat = Module::from_image(&ctx, TEST_FATBIN_SM90, "test_kernels.fatbin").unwrap();
    fat.function("test_add_one").unwrap();
}

#[test]
fn bad_modules_give_clear_errors() {
    let Some(ctx) = gpu!("bad_modules_give_clear_errors") else {
        return;
    };
    // A newer PTX ISA than any current driver accepts.
    let newer = gpu::TEST_PTX.replace(".version 8.0", ".version 9.9");
    let e = Module::from_ptx(&ctx, &newer, "newer").unwrap_err();
    let text = e.to_string();
    assert!(matches!(e, Error::ModuleLoad { .. }), "{e:?}");
    assert!(
        text.contains("CUDA_ERROR_UNSUPPORTED_PTX_VERSION") && text.contains("PTX ISA 9.9"),
        "{text}"
    );
    // Broken PTX: the JIT log is in the error.
    let broken = gpu::TEST_PTX.replace("add.f32 %f2, %f1", "add.f32 %f2, %nosuchreg");
    let e = Module::from_ptx(&ctx, &broken, "broken").unwrap_err();
    match &e {
        Error::ModuleLoad { module, log, .. } => {
            assert_eq!(module, "broken");
            assert!(log.contains("nosuchreg"), "JIT log: {log}");
        }
        other => panic!("expected ModuleLoad, got {other:?}"),
    }
    // Text with a NUL byte, and bytes that are no module at all.
    assert!(matches!(
        Module::from_ptx(&ctx, "a\0b", "nul"),
        Err(Error::InvalidArgument(_))
    ));
    assert!(matches!(
        Module::from_image(&ctx, &[0xff, 0xfe, 0x00], "junk"),
        Err(Error::InvalidArgument(_))
    ));
    // The context is still usable.
    ctx.kernel("fill_f32").unwrap();
}

#[test]
fn unknown_kernel_lists_the_known_ones() {
    let Some(ctx) = gpu!("unknown_kernel_lists_the_known_ones") else {
        return;
    };
    match ctx.kernel("axpy_f16") {
        Err(Error::UnknownKernel { name, known }) => {
            assert_eq!(name, "axpy_f16");
            assert!(known.contains(&"axpy_f32".to_string()) && known.contains(&"transpose_f64".to_string()));
        }
        other => panic!("expected UnknownKernel, got {other:?}"),
    }
    let e = ctx.kernel("nope").unwrap_err().to_string();
    assert!(e.starts_with("unknown kernel `nope`; known kernels: "), "{e}");
}

#[derive(Copy, Clone)]
#[repr(C)]
struct Params {
    n: u32,
    alpha: f32,
}
// SAFETY: repr(C) plain data matching the kernel's 8-byte, 4-aligned parameter.
unsafe impl DeviceRepr for Params {}

#[test]
fn launches_are_checked_before_the_driver_sees_them() {
    let Some(ctx) = gpu!("launches_are_checked_before_the_driver_sees_them") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    ctx.registry().register_ptx("test_kernels", gpu::TEST_PTX).unwrap();
    let f = ctx.kernel("test_struct_arg").unwrap();
    let n = 5000u32;
    let mut out = DeviceBuffer::<f32>::zeroed(&s, n as usize).unwrap();
    out.memset_bytes(0xFF).unwrap();
    let params = Params { n, alpha: 0.5 };

    let too_big = LaunchConfig {
        grid_dim: (1, 1, 1),
        block_dim: (2048, 1, 1),
        shared_mem_bytes: 0,
    };
    let mut l = s.launch_builder(&f);
    l.arg(&out).arg(&params);
    // SAFETY: arguments match test_struct_arg(float*, Params); the launch must be refused.
    let e = unsafe { l.launch(too_big) }.unwrap_err();
    assert!(matches!(e, Error::InvalidLaunch(_)));
    assert!(e.to_string().contains("2048"), "{e}");
    let too_much_smem = LaunchConfig {
        shared_mem_bytes: ctx.limits().max_shared_per_block_optin + 1,
        ..LaunchConfig::for_num_elems(n)
    };
    // SAFETY: as above.
    let refused = unsafe { l.launch(too_much_smem) };
    assert!(matches!(refused, Err(Error::InvalidLaunch(_))), "{refused:?}");
    // The buffer is untouched (still all-ones bits = NaN).
    assert!(out.to_vec().unwrap().iter().all(|v| v.is_nan()));

    // The right launch writes alpha * i with a struct argument.
    // SAFETY: as above.
    unsafe { l.launch(LaunchConfig::for_num_elems(n)) }.unwrap();
    let got = out.to_vec().unwrap();
    assert!(got.iter().enumerate().all(|(i, &v)| v == 0.5 * i as f32));

    // More arguments than the builder carries.
    let x = 0u32;
    let mut l = s.launch_builder(&f);
    for _ in 0..40 {
        l.arg(&x);
    }
    // SAFETY: refused before launch.
    let e = unsafe { l.launch(LaunchConfig::for_num_elems(1)) }.unwrap_err();
    assert!(e.to_string().contains("40 arguments"), "{e}");

    // Dynamic shared memory can be raised to the opt-in limit, not past it.
    let room = ctx.limits().max_shared_per_block_optin - f.attributes().shared_size_bytes;
    f.set_max_dynamic_shared_memory(room).unwrap();
    assert_eq!(f.max_dynamic_shared_memory(), room);
    assert!(f.set_max_dynamic_shared_memory(room + 1).is_err());
}

#[test]
fn selftest_passes_every_bundled_kernel() {
    let Some(ctx) = gpu!("selftest_passes_every_bundled_kernel") else {
        return;
    };
    let seed = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .unwrap()
        .as_nanos() as u64;
    let checks = cudrv::selftest::run_all(&ctx, seed).unwrap();
    let failed: Vec<_> = checks.iter().filter(|c| !c.passed).collect();
    assert!(failed.is_empty(), "seed {seed}: {failed:#?}");
    assert!(checks.len() > 60);
}

//! GPU tests of the memory manager: the caching pool behind DeviceBuffer, cross-stream reuse,
//! out-of-memory, pinned staging of pageable copies, and a multi-threaded stress run. The tests
//! take turns: they read and switch the context's pool (statistics, caching on and off, its
//! cache emptied), which the other tests of the file share.

#[path = "support/gpu.rs"]
mod gpu;

use std::sync::Arc;

use cudrv::selftest::Rng;
use cudrv::{DeviceBuffer, DeviceSlice, DeviceSliceMut, Error};

#[test]
fn freed_memory_is_reused_on_the_same_stream_without_the_driver() {
    let Some((ctx, _turn)) = gpu::alone("freed_memory_is_reused_on_the_same_stream_without_the_driver") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let before = ctx.memory_stats();
    let a = DeviceBuffer::<f32>::zeroed(&s, 1000).unwrap();
    let addr = a.device_ptr();
    drop(a);
    let b = DeviceBuffer::<f32>::zeroed(&s, 900).unwrap();
    assert_eq!(
        b.device_ptr(),
        addr,
        "same stream, fitting size: the cached block comes back"
    );
    let after = ctx.memory_stats();
    assert_eq!(after.allocations - before.allocations, 2);
    assert!(after.cache_hits > before.cache_hits);
    assert!(after.reserved_bytes >= after.allocated_bytes);
    assert!(after.to_json().contains("\"cache_hits\""));
    // The reused memory holds what was written to it, not stale data.
    assert!(b.to_vec().unwrap().iter().all(|&v| v == 0.0));
}

#[test]
fn memory_used_on_another_stream_is_not_reused_early() {
    let Some((ctx, _turn)) = gpu::alone("memory_used_on_another_stream_is_not_reused_early") else {
        return;
    };
    let (s1, s2) = (ctx.new_stream().unwrap(), ctx.new_stream().unwrap());
    let n = 1 << 22;
    for round in 0..20 {
        let src = DeviceBuffer::from_slice(&s1, &vec![round as f32; n]).unwrap();
        let mut dst = DeviceBuffer::<f32>::zeroed(&s2, n).unwrap();
        // s2 reads src (recorded with the pool); src is freed at once on s1.
        dst.copy_from_device(&src).unwrap();
        drop(src);
        // A new buffer on s1 may get src's memory only after s2's copy has read it.
        let mut scribble = DeviceBuffer::<f32>::zeroed(&s1, n).unwrap();
        scribble.memset_bytes(0xFF).unwrap();
        let got = dst.to_vec().unwrap();
        assert!(
            got.iter().all(|&v| v == round as f32),
            "round {round}: the copy saw reused memory"
        );
    }
}

#[test]
fn caching_can_be_switched_off_and_the_cache_emptied() {
    let Some((ctx, _turn)) = gpu::alone("caching_can_be_switched_off_and_the_cache_emptied") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let data = Rng::new(9).vec::<f32>(5000, -1.0, 1.0);
    ctx.set_caching(false);
    let direct = DeviceBuffer::from_slice(&s, &data).unwrap();
    ctx.set_caching(true);
    let pooled = DeviceBuffer::from_slice(&s, &data).unwrap();
    assert_eq!(direct.to_vec().unwrap(), pooled.to_vec().unwrap());
    drop((direct, pooled));
    s.synchronize().unwrap();
    let stats = ctx.memory_stats();
    let released = ctx.empty_cache();
    assert!(released as u64 <= stats.reserved_bytes);
}

#[test]
fn pageable_copies_are_staged_and_exact() {
    let Some((ctx, _turn)) = gpu::alone("pageable_copies_are_staged_and_exact") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let mut rng = Rng::new(11);
    // Below, at and above the staging threshold, and a size that ends mid-chunk.
    for bytes in [4096usize, 4 << 20, (3 * (8 << 20)) + 12_344, 100 << 20] {
        let n = bytes / 4;
        let data: Vec<f32> = rng.vec(n, -1e6, 1e6);
        let mut dev = DeviceBuffer::<f32>::zeroed(&s, n).unwrap();
        dev.memset_bytes(0xFF).unwrap();
        dev.copy_from_slice(&data).unwrap();
        let mut back = vec![f32::NAN; n];
        dev.copy_to_slice(&mut back).unwrap();
        assert!(back == data, "{bytes} bytes did not round-trip");
        // Views at an odd offset take the same path.
        let part = dev.slice(3..n - 5).unwrap().to_vec().unwrap();
        assert!(part == data[3..n - 5]);
    }
}

#[test]
fn out_of_memory_reports_the_pool_and_recovers() {
    let Some((ctx, _turn)) = gpu::alone("out_of_memory_reports_the_pool_and_recovers") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let held = DeviceBuffer::<u8>::zeroed(&s, 64 << 20).unwrap();
    let (_, total) = ctx.memory_info().unwrap();
    // SAFETY: never read; must fail.
    match unsafe { DeviceBuffer::<u8>::uninit(&s, total) } {
        Err(Error::OutOfMemory {
            requested,
            reserved,
            allocated,
            ..
        }) => {
            assert_eq!(requested, total);
            assert!(allocated >= 64 << 20 && reserved >= allocated);
        }
        other => panic!("expected OutOfMemory, got {other:?}"),
    }
    drop(held);
    let again = DeviceBuffer::from_slice(&s, &[1u8, 2, 3]).unwrap();
    assert_eq!(again.to_vec().unwrap(), vec![1, 2, 3]);
}

/// 8 threads x 4 streams, random sizes; every buffer is filled with its own tag and checked
/// before it is freed, and some are copied across streams and freed early. Any overlap between
/// live buffers, or reuse before another stream finished with the memory, shows as a wrong tag.
#[test]
fn stress_many_threads_many_streams() {
    let Some((ctx, _turn)) = gpu::alone("stress_many_threads_many_streams") else {
        return;
    };
    let ops: usize = std::env::var("CUDRV_STRESS_OPS")
        .ok()
        .and_then(|v| v.parse().ok())
        .unwrap_or(1_000_000);
    let threads = 8;
    let start = std::time::Instant::now();
    let checked: Vec<usize> = std::thread::scope(|scope| {
        let handles: Vec<_> = (0..threads)
            .map(|t| {
                let ctx = Arc::clone(&ctx);
                scope.spawn(move || {
                    let streams: Vec<_> = (0..4).map(|_| ctx.new_stream().unwrap()).collect();
                    let mut rng = Rng::new(1000 + t as u64);
                    let mut live: Vec<(DeviceBuffer<u8>, u8)> = Vec::new();
                    let mut checked = 0usize;
                    for op in 0..ops / threads {
                        // Log-uniform sizes from 1 B to 4 MiB, with an occasional 32 MiB.
                        let bytes = if op % 997 == 0 {
                            32 << 20
                        } else {
                            rng.uniform(0.0, 22.0).exp2() as usize + 1
                        };
                        let stream = &streams[rng.next_u64() as usize % 4];
                        let tag = (rng.next_u64() % 255 + 1) as u8;
                        // SAFETY: filled by the memset before any read.
                        let mut buf = unsafe { DeviceBuffer::<u8>::uninit(stream, bytes).unwrap() };
                        buf.memset_bytes(tag).unwrap();
                        if op % 50 == 0 {
                            // Copy to another stream's buffer and free the source at once.
                            let other = &streams[(rng.next_u64() as usize) % 4];
                            let mut copy = DeviceBuffer::<u8>::zeroed(other, bytes).unwrap();
                            copy.copy_from_device(&buf).unwrap();
                            drop(buf);
                            buf = copy;
                        }
                        live.push((buf, tag));
                        if live.len() > 16 {
                            let victim = rng.next_u64() as usize % live.len();
                            let (buf, tag) = live.swap_remove(victim);
                            let at = rng.next_u64() as usize % buf.len();
                            let end = (at + 64).min(buf.len());
                            let window = buf.slice(at..end).unwrap().to_vec().unwrap();
                            assert!(window.iter().all(|&b| b == tag), "thread {t} op {op}: corrupted buffer");
                            if op % 1000 == 0 {
                                assert!(buf.to_vec().unwrap().iter().all(|&b| b == tag));
                            }
                            checked += 1;
                        }
                    }
                    for (buf, tag) in live {
                        assert!(buf.slice(..1).unwrap().to_vec().unwrap()[0] == tag);
                    }
                    checked
                })
            })
            .collect();
        handles.into_iter().map(|h| h.join().unwrap()).collect()
    });
    let stats = ctx.memory_stats();
    let overhead = stats.peak_reserved_bytes as f64 / stats.peak_allocated_bytes.max(1) as f64;
    let line = format!(
        "stress: {ops} ops on {threads} threads x 4 streams in {:.1} s, {} buffers checked; hit rate {:.4}, \
         peak reserved / peak allocated {:.3}; stats {}\n",
        start.elapsed().as_secs_f64(),
        checked.iter().sum::<usize>(),
        stats.hit_rate,
        overhead,
        stats.to_json()
    );
    use std::io::Write;
    let _ = std::io::stdout().lock().write_all(line.as_bytes());
}

#[test]
fn pinned_buffers_come_from_a_pool_and_start_zeroed() {
    let Some((ctx, _turn)) = gpu::alone("pinned_buffers_come_from_a_pool_and_start_zeroed") else {
        return;
    };
    let pool = ctx.pinned_pool();
    let before = pool.stats();
    let mut a = cudrv::PinnedHostBuffer::<u32>::new(&ctx, 100_000).unwrap();
    a.as_mut_slice().unwrap().fill(0xDEAD_BEEF);
    drop(a);
    // The same size again: served from the cache, and zeroed although the memory was written.
    let b = cudrv::PinnedHostBuffer::<u32>::new(&ctx, 99_000).unwrap();
    assert!(b.as_slice().unwrap().iter().all(|&v| v == 0));
    let after = pool.stats();
    assert!(after.hits > before.hits, "{before:?} -> {after:?}");
    drop(b);
    assert!(pool.stats().cached_bytes >= 396_000);
    pool.trim();
    assert_eq!(pool.stats().cached_bytes, 0);
    // An async copy through a pooled buffer still waits before the memory is reused.
    let s = ctx.new_stream().unwrap();
    let data: Vec<u32> = (0..1 << 20).collect();
    let dev = DeviceBuffer::from_slice(&s, &data).unwrap();
    let mut host = cudrv::PinnedHostBuffer::<u32>::new(&ctx, data.len()).unwrap();
    dev.copy_to_pinned_async(&mut host).unwrap();
    assert!(host.as_slice().unwrap() == &data[..]);
}

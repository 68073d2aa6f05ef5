//! GPU tests of the persistent executor: random chains of bundled items against an f64 CPU
//! reference, fused items, the barriers between items that touch memory through other threads,
//! the watchdog, a queue overrun, shutdown with work in flight, bad arguments. Each skips visibly
//! without a GPU (and fails under REQUIRE_GPU=1).

#[path = "support/gpu.rs"]
mod gpu;

#[path = "support/fuse_chains.rs"]
mod chains;

use std::time::{Duration, Instant};

use cudrv::exec::Executor;
use cudrv::fuse::DType;
use cudrv::selftest::{rel_error, Rng};
use cudrv::{DeviceBuffer, DeviceSlice, Error};

fn seed() -> u64 {
    gpu::fresh_seed()
}

/// Vectors of a random chain: more than the buffers whose values the executor's threads keep
/// between items (4), so that the chains also take over kept buffers.
const VECTORS: usize = 6;

/// One step of a random chain over the vectors, on their first `len` elements (a prefix view
/// of each operand): applied to the executor batch and to the f64 reference alike.
#[derive(Clone, Copy, Debug)]
enum Step {
    Axpy(usize, f32, usize),
    Scale(usize, f32, usize),
    Axpby(usize, f32, usize, f32),
    Add(usize, usize, usize),
    Mul(usize, usize, usize),
    Fill(usize, f32),
    Sum(usize),
}

/// Steps with their lengths: the whole vectors mostly, a prefix of them at times (the executor
/// keeps a buffer's values only as far as an item went, so a longer item after a shorter one
/// reads the rest from memory).
fn random_chain(rng: &mut Rng, len: usize, n: usize) -> Vec<(Step, usize)> {
    let mut pick = |k: usize| (rng.uniform(0.0, k as f64) as usize).min(k - 1);
    let mut steps = Vec::new();
    for _ in 0..len {
        let m = if pick(4) == 0 { 1 + pick(n) } else { n };
        let (a, b, c) = (pick(VECTORS), pick(VECTORS), pick(VECTORS));
        let v = (pick(1000) as f32 / 1000.0 - 0.5) * 1.5;
        steps.push((
            match pick(13) {
                0..=2 => Step::Axpy(a, v, b),
                3..=4 => Step::Scale(a, v, b),
                5..=6 => Step::Axpby(a, v, b, 0.5),
                7..=8 => Step::Add(a, b, c),
                9..=10 => Step::Mul(a, b, c),
                11 => Step::Fill(a, v),
                _ => Step::Sum(a),
            },
            m,
        ));
    }
    steps
}

/// The chain in f32 on the host, element by element as the items compute it (sums aside):
/// where it differs from the f64 reference, the chain is ill-conditioned in f32 (cancellation,
/// or values that underflow: a product of small factors reaches 0 in f32 but not in f64), and a
/// difference between the executor and the reference says nothing about the executor.
// Element i of several vectors at once: a range reads best.
#[allow(clippy::needless_range_loop)]
fn in_f32(steps: &[(Step, usize)], init: &[Vec<f64>; VECTORS]) -> [Vec<f32>; VECTORS] {
    let mut v: [Vec<f32>; VECTORS] = std::array::from_fn(|k| init[k].iter().map(|&x| x as f32).collect());
    for &(ref s, m) in steps {
        for i in 0..m {
            match *s {
                Step::Axpy(y, a, x) => v[y][i] = a.mul_add(v[x][i], v[y][i]),
                Step::Scale(y, a, x) => v[y][i] = a * v[x][i],
                Step::Axpby(y, a, x, b) => v[y][i] = a * v[x][i] + b * v[y][i],
                Step::Add(o, a, b) => v[o][i] = v[a][i] + v[b][i],
                Step::Mul(o, a, b) => v[o][i] = v[a][i] * v[b][i],
                Step::Fill(y, a) => v[y][i] = a,
                Step::Sum(_) => {}
            }
        }
    }
    v
}

// Element i of several vectors at once (v[y][i] from v[x][i]): an index, not an iterator.
#[allow(clippy::needless_range_loop)]
fn reference(steps: &[(Step, usize)], init: &[Vec<f64>; VECTORS]) -> ([Vec<f64>; VECTORS], Vec<(f64, f64)>, f64) {
    let mut v = init.clone();
    let mut sums = Vec::new();
    let mut largest = 0.0f64;
    for &(ref s, m) in steps {
        for i in 0..m {
            match *s {
                Step::Axpy(y, a, x) => v[y][i] += a as f64 * v[x][i],
                Step::Scale(y, a, x) => v[y][i] = a as f64 * v[x][i],
                Step::Axpby(y, a, x, b) => v[y][i] = a as f64 * v[x][i] + b as f64 * v[y][i],
                Step::Add(o, a, b) => v[o][i] = v[a][i] + v[b][i],
                Step::Mul(o, a, b) => v[o][i] = v[a][i] * v[b][i],
                Step::Fill(y, a) => v[y][i] = a as f64,
                Step::Sum(_) => {}
            }
        }
        if let Step::Sum(x) = *s {
            let sum: f64 = v[x][..m].iter().sum();
            let magnitude: f64 = v[x][..m].iter().map(|e| e.abs()).sum();
            largest = largest.max(magnitude);
            sums.push((sum, magnitude));
        }
        for x in v.iter().flatten() {
            largest = if x.is_finite() {
                largest.max(x.abs())
            } else {
                f64::INFINITY
            };
        }
    }
    (v, sums, largest)
}

#[test]
fn exec_runs_random_chains_like_the_reference() {
    let Some((ctx, _turn)) = gpu::alone("exec_runs_random_chains_like_the_reference") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = seed();
    let mut rng = Rng::new(seed);
    let (mut ran, mut skipped) = (0, 0);
    // With the fetcher block (on a multiprocessor of its own) and without it (block 0 fetches),
    // with few and with as many worker blocks as the occupancy allows on H100.
    for (blocks_per_sm, fetcher) in [(1, true), (2, false), (4, true)] {
        let exec = Executor::builder(&ctx)
            .blocks_per_sm(blocks_per_sm)
            .fetcher(fetcher)
            .start()
            .unwrap();
        if !fetcher {
            assert!(!exec.has_fetcher());
        } else if blocks_per_sm == 1 {
            assert!(
                exec.has_fetcher(),
                "one worker block per SM leaves room for the fetcher"
            );
        }
        for round in 0..4 {
            let n = match round {
                0 => 1,
                1 => rng.uniform(2.0, 5000.0) as usize,
                _ => rng.uniform(5000.0, 400_000.0) as usize,
            };
            let steps = random_chain(&mut rng, 170, n);
            let init: [Vec<f64>; VECTORS] = std::array::from_fn(|_| {
                let v: Vec<f32> = rng.vec(n, -1.0, 1.0);
                v.into_iter().map(|x| x as f64).collect()
            });
            let (want, want_sums, largest) = reference(&steps, &init);
            // A chain whose values (at any step) leave f32's range, or that f32 itself cannot
            // follow (host f32 against f64 beyond 1e-5), says nothing about the executor.
            let host32 = in_f32(&steps, &init);
            let f32_follows = (0..VECTORS).all(|k| {
                let h: Vec<f64> = host32[k].iter().map(|&x| x as f64).collect();
                rel_error(&h, &want[k]) < 1e-5
            });
            if largest > 1e20 || !f32_follows {
                skipped += 1;
                continue;
            }
            ran += 1;
            let bufs: Vec<DeviceBuffer<f32>> = init
                .iter()
                .map(|v| DeviceBuffer::from_slice(&s, &v.iter().map(|&x| x as f32).collect::<Vec<_>>()).unwrap())
                .collect();
            let sums: Vec<DeviceBuffer<f32>> = (0..want_sums.len())
                .map(|_| DeviceBuffer::from_slice(&s, &[f32::NAN]).unwrap())
                .collect();
            // Each step's operands: views of the vectors' first `len` elements.
            let views: Vec<Vec<_>> = steps
                .iter()
                .map(|&(_, m)| bufs.iter().map(|b| b.slice(..m).unwrap()).collect())
                .collect();
            let mut b = exec.batch();
            let mut k = 0;
            for (&(st, _), v) in steps.iter().zip(&views) {
                match st {
                    Step::Axpy(y, a, x) => b.axpy(&v[y], a, &v[x]).unwrap(),
                    Step::Scale(y, a, x) => b.scale(&v[y], a, &v[x]).unwrap(),
                    Step::Axpby(y, a, x, c) => b.axpby(&v[y], a, &v[x], c).unwrap(),
                    Step::Add(o, x, y) => b.add(&v[o], &v[x], &v[y]).unwrap(),
                    Step::Mul(o, x, y) => b.mul(&v[o], &v[x], &v[y]).unwrap(),
                    Step::Fill(y, a) => b.fill(&v[y], a).unwrap(),
                    Step::Sum(x) => {
                        b.sum(&sums[k], &v[x]).unwrap();
                        k += 1;
                    }
                }
            }
            b.run().unwrap();
            for (i, buf) in bufs.iter().enumerate() {
                let e = rel_error(&buf.to_vec().unwrap(), &want[i]);
                assert!(
                    e < 1e-4,
                    "vector {i}, n = {n}, {blocks_per_sm} blocks/SM, fetcher {}: error {e:e} (seed {seed:#x})",
                    exec.has_fetcher()
                );
            }
            for (k, sum) in sums.iter().enumerate() {
                let got = sum.to_vec().unwrap()[0] as f64;
                // Terms of both signs: judged against the sum of their magnitudes.
                let (want, magnitude) = want_sums[k];
                assert!(
                    (got - want).abs() / magnitude.max(1.0) < 1e-4,
                    "sum {k}, n = {n}: {got} vs {want} (seed {seed:#x})"
                );
            }
        }
        exec.shutdown().unwrap();
    }
    println!("random chains: {ran} checked, {skipped} skipped as ill-conditioned in f32 (seed {seed:#x})");
    assert!(
        ran * 2 >= ran + skipped,
        "only {ran} of {} chains were well-conditioned (seed {seed:#x})",
        ran + skipped
    );
}

#[test]
fn exec_orders_overlapping_views_with_barriers() {
    let Some((ctx, _turn)) = gpu::alone("exec_orders_overlapping_views_with_barriers") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let exec = Executor::builder(&ctx).start().unwrap();
    let n = 1 << 20;
    let big = DeviceBuffer::from_slice(&s, &vec![0.0f32; n + 1]).unwrap();
    let ones = DeviceBuffer::from_slice(&s, &vec![1.0f32; n]).unwrap();
    let other = DeviceBuffer::from_slice(&s, &vec![0.0f32; n]).unwrap();
    let lo = big.slice(0..n).unwrap();
    let hi = big.slice(1..n + 1).unwrap();
    let mut b = exec.batch();
    for _ in 0..8 {
        b.axpy(&lo, 1.0, &ones).unwrap(); // big[i] += 1 for i < n
        b.scale(&other, 2.0, &hi).unwrap(); // other[i] = 2 big[i + 1]: written by another thread
        b.axpy(&lo, 0.5, &other).unwrap(); // big[i] += other[i]: overwrites what others read
    }
    assert!(b.barriers() >= 15, "{} barriers", b.barriers());
    b.run().unwrap();
    let mut want = vec![0.0f64; n + 1];
    let mut oth = vec![0.0f64; n];
    for _ in 0..8 {
        for v in want.iter_mut().take(n) {
            *v += 1.0;
        }
        for i in 0..n {
            oth[i] = 2.0 * want[i + 1];
        }
        for i in 0..n {
            want[i] += 0.5 * oth[i];
        }
    }
    assert!(rel_error(&big.to_vec().unwrap(), &want) < 1e-6);
    exec.shutdown().unwrap();
}

#[test]
fn exec_runs_fused_items_between_bundled_ones() {
    let Some((ctx, _turn)) = gpu::alone("exec_runs_fused_items_between_bundled_ones") else {
        return;
    };
    let s = ctx.new_stream().unwrap();
    let seed = seed();
    let mut rng = Rng::new(seed);
    let kl = chains::kl_sum(DType::F32);
    let belief = chains::belief_update(DType::F32);
    let softmax = chains::softmax(DType::F64);
    let exec = Executor::builder(&ctx)
        .fusion(&kl)
        .fusion(&belief)
        .fusion(&softmax)
        .start()
        .unwrap();
    for _ in 0..3 {
        let n = rng.uniform(1.0, 200_000.0) as usize;
        let p: Vec<f32> = rng.vec(n, 0.05, 1.0);
        let q: Vec<f32> = rng.vec(n, 0.05, 1.0);
        let (rows, cols) = (rng.uniform(1.0, 300.0) as usize, rng.uniform(1.0, 2000.0) as usize);
        let w: Vec<f32> = rng.vec(rows * cols, -1.0, 1.0);
        let obs: Vec<f32> = rng.vec(cols, -1.0, 1.0);
        let x: Vec<f64> = rng.vec(rows * cols, -5.0, 5.0);
        let up = |v: &[f32]| DeviceBuffer::from_slice(&s, v).unwrap();
        let (dp, dq, dw, dobs) = (up(&p), up(&q), up(&w), up(&obs));
        let pred = DeviceBuffer::<f32>::zeroed(&s, cols).unwrap();
        let belief0 = DeviceBuffer::<f32>::zeroed(&s, rows).unwrap();
        let out = up(&vec![f32::NAN; rows]);
        let total = up(&[f32::NAN]);
        let dx = DeviceBuffer::from_slice(&s, &x).unwrap();
        let dy = DeviceBuffer::from_slice(&s, &vec![f64::NAN; rows * cols]).unwrap();
        let mut b = exec.batch();
        b.scale(&dq, 1.0, &dq).unwrap(); // a bundled item before: q unchanged
        b.fused("kl_sum", 1, n)
            .unwrap()
            .input("p", &dp)
            .input("q", &dq)
            .output("kl", &total)
            .push()
            .unwrap();
        b.scale(&pred, 0.5, &dobs).unwrap(); // pred = obs / 2, read per column by the next item
        b.fused("belief_update", rows, cols)
            .unwrap()
            .input("w", &dw)
            .input("obs", &dobs)
            .input("pred", &pred)
            .input("belief", &belief0)
            .scalar("lr", 2.0)
            .output("belief_new", &out)
            .push()
            .unwrap();
        b.fused("softmax_rows", rows, cols)
            .unwrap()
            .input("x", &dx)
            .output("y", &dy)
            .push()
            .unwrap();
        b.run().unwrap();
        let kl_want: f64 = p
            .iter()
            .zip(&q)
            .map(|(&p, &q)| p as f64 * (p as f64 / q as f64).ln())
            .sum();
        let kl_scale: f64 = p
            .iter()
            .zip(&q)
            .map(|(&p, &q)| (p as f64 * (p as f64 / q as f64).ln()).abs())
            .sum();
        let got = total.to_vec().unwrap()[0] as f64;
        assert!(
            (got - kl_want).abs() / kl_scale.max(1e-30) < 1e-5,
            "kl {got} vs {kl_want} (seed {seed:#x})"
        );
        let belief_want: Vec<f64> = (0..rows)
            .map(|i| {
                2.0 * (0..cols)
                    .map(|j| w[i * cols + j] as f64 * (obs[j] as f64 * 0.5))
                    .sum::<f64>()
            })
            .collect();
        let e = rel_error(&out.to_vec().unwrap(), &belief_want);
        assert!(e < 1e-5, "belief error {e:e} (seed {seed:#x})");
        let mut sm = vec![0.0; rows * cols];
        for i in 0..rows {
            let r = &x[i * cols..(i + 1) * cols];
            let m = r.iter().cloned().fold(f64::NEG_INFINITY, f64::max);
            let z: f64 = r.iter().map(|v| (v - m).exp()).sum();
            for j in 0..cols {
                sm[i * cols + j] = (r[j] - m).exp() / z;
            }
        }
        let e = rel_error(&dy.to_vec().unwrap(), &sm);
        assert!(e < 1e-12, "softmax error {e:e} (seed {seed:#x})");
    }
    exec.shutdown().unwrap();
}

#[test]
fn exec_watchdog_overrun_shutdown_and_bad_arguments() {
    let Some((ctx, _turn)) = gpu::alone("exec_watchdog_overrun_shutdown_and_bad_arguments") else {
        return;
    };
    // Block 0 fetching, and the fetcher block (which must wrap around the small ring, stop on
    // shutdown and keep up with a stuck executor just the same).
    for fetcher in [false, true] {
        watchdog_overrun_shutdown(&ctx, fetcher);
    }
}

fn watchdog_overrun_shutdown(ctx: &std::sync::Arc<cudrv::Context>, fetcher: bool) {
    let s = ctx.new_stream().unwrap();
    // A batch larger than the queue is refused at once.
    let exec = Executor::builder(ctx)
        .capacity(64)
        .watchdog(Duration::from_secs(5))
        .fetcher(fetcher)
        .start()
        .unwrap();
    assert_eq!(exec.has_fetcher(), fetcher);
    let y = DeviceBuffer::from_slice(&s, &vec![0.0f32; 1000]).unwrap();
    let ones = DeviceBuffer::from_slice(&s, &vec![1.0f32; 1000]).unwrap();
    let mut b = exec.batch();
    for _ in 0..70 {
        b.axpy(&y, 1.0, &ones).unwrap();
    }
    let e = b.submit().err().unwrap().to_string();
    assert!(e.contains("overrun"), "{e}");
    // More batches in flight than the queue holds: submits wait for room, all complete in order.
    let mut tickets = Vec::new();
    for _ in 0..40 {
        let mut b = exec.batch();
        b.sleep(Duration::from_micros(200));
        b.axpy(&y, 1.0, &ones).unwrap();
        b.axpy(&y, 1.0, &ones).unwrap();
        tickets.push(b.submit().unwrap());
    }
    let numbers: Vec<u64> = tickets.iter().map(|t| t.number()).collect();
    assert!(numbers.windows(2).all(|w| w[1] == w[0] + 1));
    for t in tickets {
        t.wait().unwrap();
    }
    assert_eq!(y.to_vec().unwrap(), vec![80.0; 1000]);
    // Bad arguments are refused before anything is queued.
    let short = DeviceBuffer::<f32>::zeroed(&s, 999).unwrap();
    let mut b = exec.batch();
    let e = b.axpy(&y, 1.0, &short).unwrap_err().to_string();
    assert!(e.contains("lengths differ"), "{e}");
    let e = b.sum(&y, &ones).unwrap_err().to_string();
    assert!(e.contains("takes 1"), "{e}");
    let e = b.fused("nope", 1, 1).err().unwrap().to_string();
    assert!(e.contains("no fusion `nope`"), "{e}");
    drop(b);
    // Shutdown with work in flight: the work finishes first.
    let mut b = exec.batch();
    b.sleep(Duration::from_millis(100));
    b.fill(&y, 7.0).unwrap();
    let t = b.submit().unwrap();
    let started = Instant::now();
    exec.shutdown().unwrap();
    assert!(started.elapsed() >= Duration::from_millis(90));
    t.wait().unwrap();
    assert_eq!(y.to_vec().unwrap(), vec![7.0; 1000]);
    let e = exec.batch().run().unwrap_err().to_string();
    assert!(e.contains("shut down"), "{e}");
    drop(exec);

    // The watchdog: an item that runs past it is a timeout, not a hang; the executor then
    // refuses work, and shuts down once the item ends.
    let exec = Executor::builder(ctx)
        .watchdog(Duration::from_millis(300))
        .fetcher(fetcher)
        .start()
        .unwrap();
    let mut b = exec.batch();
    b.sleep(Duration::from_millis(1500));
    let started = Instant::now();
    let e = b.run().unwrap_err();
    assert!(matches!(e, Error::Timeout { .. }), "{e}");
    assert!(started.elapsed() < Duration::from_millis(1400));
    let e = exec.batch().run().unwrap_err().to_string();
    assert!(e.contains("stuck"), "{e}");
    std::thread::sleep(Duration::from_millis(1500));
    exec.shutdown().unwrap();
    // The stream that fed it is still usable.
    let z = DeviceBuffer::from_slice(&s, &[3.0f32; 4]).unwrap();
    assert_eq!(z.to_vec().unwrap(), vec![3.0; 4]);
}

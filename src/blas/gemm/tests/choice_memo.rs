//! The dispatch memo (`choice_cache`): its key holds everything the tiled kernels' choice reads.
//! Random GEMMs of every type, op, layout, batch, knob and alignment are changed in what the key
//! leaves out (addresses by multiples of 16, C and bias addresses, nonzero alpha, beta, which
//! activation): the key and the choice must both stay the same. Then a shuffled sequence with
//! repeats through the memo gives what the choice gives directly.

use super::super::builder::{Gemm, Plan};
use super::super::choice_cache::{self, Key};
use super::super::dispatch::choose_on;
use super::super::params::GemmParams;
use super::super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::{Activation, Layout, MathMode, Transpose};
use crate::selftest::Rng;

/// A random GEMM description and its operand addresses (A, B, C, bias).
struct Case<S> {
    g: Gemm<S>,
    ptrs: [u64; 4],
}

fn dim(rng: &mut Rng) -> usize {
    rng.pick(&[
        1, 2, 7, 16, 17, 32, 33, 64, 100, 128, 255, 256, 1000, 1024, 4096, 11008, 65536,
    ])
}

fn random_case<S: Copy + From<u8>>(rng: &mut Rng) -> Case<S> {
    use Transpose::{N, T};
    let (m, n, k) = (dim(rng), dim(rng), dim(rng));
    let mut g = Gemm::<S>::new(rng.pick(&[N, T]), rng.pick(&[N, T]), m, n, k)
        .layout(rng.pick(&[Layout::ColMajor, Layout::RowMajor]))
        .math(rng.pick(&[MathMode::Exact, MathMode::Tf32]))
        .kernel(rng.pick(&[
            Kernel::Auto,
            Kernel::Auto,
            Kernel::Auto,
            Kernel::Simt,
            Kernel::TensorCore,
            Kernel::MmaSync,
            Kernel::Wgmma,
        ]))
        .tile(rng.pick(&[
            Tile::Auto,
            Tile::Auto,
            Tile::Small,
            Tile::Large,
            Tile::Broad,
            Tile::Wide,
            Tile::Narrow,
        ]))
        .split_k(rng.pick(&[SplitK::Auto, SplitK::Auto, SplitK::Off, SplitK::Parts(4)]))
        .activation(rng.pick(&[Activation::None, Activation::None, Activation::Relu]))
        .alpha(S::from(rng.pick(&[0u8, 1, 1, 2])));
    if rng.next_u64() % 3 == 0 {
        // At least every stored dimension, so that any op and layout plans.
        let pad = rng.pick(&[0usize, 1, 3, 8]);
        g = g.ld(m.max(k) + pad, k.max(n) + pad, m.max(n) + pad);
    }
    if rng.next_u64() % 3 == 0 {
        let batch = rng.pick(&[2usize, 4, 512]);
        // Strides of at least one matrix at any leading dimension drawn above (0: shared).
        let extra = rng.pick(&[0usize, 1, 8]);
        let span = |x: usize, y: usize| (x + 8) * y + extra;
        let sa = if rng.next_u64() % 4 == 0 {
            0
        } else {
            span(m.max(k), m.max(k))
        };
        let sb = if rng.next_u64() % 4 == 0 {
            0
        } else {
            span(k.max(n), k.max(n))
        };
        g = g.batched(batch, sa, sb, span(m.max(n), m.max(n)));
    }
    let base = 1u64 << 32;
    let ptrs = [
        base + rng.pick(&[0u64, 2, 4, 8, 16, 256]),
        base * 2 + rng.pick(&[0u64, 2, 4, 8, 16, 256]),
        base * 3 + rng.pick(&[0u64, 4, 256]),
        rng.pick(&[0u64, base * 4]),
    ];
    Case { g, ptrs }
}

/// The plan and kernel parameters of `case` (`None` where it does not plan).
fn planned<S: Copy + Into<f64>>(case: &Case<S>) -> Option<(Plan, GemmParams)> {
    let plan = case.g.plan([usize::MAX / 64; 3], None).ok()?;
    let [a, b, c, bias] = case.ptrs;
    let params = case.g.params(&plan, [a, b, c], bias);
    Some((plan, params))
}

/// An H100's compute capability and multiprocessor count.
const H100: ((u32, u32), usize) = ((9, 0), 132);

/// The key and the choice (or its error's text) of `case` on an H100.
fn key_and_choice<T: GemmType>(case: &Case<T::Scalar>) -> Option<(Key, Result<String, String>)>
where
    T::Scalar: Copy + Into<f64>,
{
    let (plan, params) = planned(case)?;
    let ((cc, sms), g) = (H100, &case.g);
    let key = Key::new::<T, T::Scalar>(g, &plan, &params, cc, sms, false);
    let choice = choose_on::<T, T::Scalar>(g, &plan, &params, cc, sms, false)
        .map(|c| format!("{c:?}"))
        .map_err(|e| e.to_string());
    Some((key, choice))
}

fn invariance<T: GemmType>(seed: u64)
where
    T::Scalar: Copy + Into<f64> + From<u8>,
{
    let mut rng = Rng::new(seed);
    let mut checked = 0;
    for _ in 0..3000 {
        let case = random_case::<T::Scalar>(&mut rng);
        let Some((key, choice)) = key_and_choice::<T>(&case) else {
            continue;
        };
        // What the key leaves out: operand addresses by multiples of 16, C and the bias, a
        // nonzero alpha, beta, which activation.
        let mut other = Case {
            g: case.g,
            ptrs: case.ptrs,
        };
        other.ptrs[0] += 16 * (1 + rng.next_u64() % 1000);
        other.ptrs[1] += 16 * (1 + rng.next_u64() % 1000);
        other.ptrs[2] += 2 * (1 + rng.next_u64() % 1000);
        other.ptrs[3] = if other.ptrs[3] == 0 { 0 } else { other.ptrs[3] + 2 };
        let alpha: f64 = case.g.alpha.into();
        if alpha != 0.0 {
            other.g = other.g.alpha(T::Scalar::from(3u8));
        }
        // The key holds whether there is an activation, not which.
        let act = if case.g.activation.op().is_some() {
            rng.pick(&Activation::APPLIED)
        } else {
            Activation::None
        };
        other.g = other.g.beta(T::Scalar::from(rng.pick(&[0u8, 1, 2]))).activation(act);
        let (other_key, other_choice) = key_and_choice::<T>(&other).expect("the same shape plans");
        assert_eq!(key, other_key, "{} {:?}", T::NAME, case.g);
        assert_eq!(choice, other_choice, "{} {:?} vs {:?}", T::NAME, case.g, other.g);
        checked += 1;
    }
    assert!(checked > 1000, "{}: only {checked} cases planned", T::NAME);
}

#[test]
fn the_key_holds_everything_the_choice_reads() {
    let seed = 0x0005_eedc_4c4e;
    invariance::<f32>(seed);
    invariance::<f64>(seed + 1);
    invariance::<half::f16>(seed + 2);
    invariance::<half::bf16>(seed + 3);
}

#[test]
fn the_memo_answers_what_the_choice_answers() {
    let mut rng = Rng::new(0x000c_4c4e_0002);
    let cases: Vec<Case<f32>> = (0..200).map(|_| random_case::<f32>(&mut rng)).collect();
    for round in 0..3 {
        for i in 0..cases.len() {
            let case = &cases[(i * 7 + round * 13) % cases.len()];
            let Some((plan, params)) = planned(case) else {
                continue;
            };
            let ((cc, sms), g) = (H100, &case.g);
            let key = Key::new::<f32, f32>(g, &plan, &params, cc, sms, false);
            let direct = choose_on::<f32, f32>(g, &plan, &params, cc, sms, false);
            let memo = choice_cache::get_or_choose(key, || choose_on::<f32, f32>(g, &plan, &params, cc, sms, false));
            match (direct, memo) {
                (Ok(d), Ok(m)) => assert_eq!(d, *m, "{g:?}"),
                (Err(d), Err(m)) => assert_eq!(d.to_string(), m.to_string(), "{g:?}"),
                (d, m) => panic!("{g:?}: direct {d:?}, memo {m:?}"),
            }
        }
    }
    assert!(choice_cache::len() > 0);
}

#[test]
fn unaligned_f64_products_read_their_operands_in_place_unless_the_copy_pays() {
    use Transpose::{N, T};
    let choose = |g: &Gemm<f64>, offset: u64| {
        let plan = g.plan([usize::MAX / 64; 3], None).expect("plan");
        let p = g.params(&plan, [0x1000_0000 + 8 * offset, 0x2000_0000, 0x3000_0000], 0);
        choose_on::<f64, f64>(g, &plan, &p, H100.0, H100.1, false).expect("choice")
    };
    // A decode step at an odd offset: the thin tile's 8-byte variant, nothing copied.
    let c = choose(&Gemm::new(T, N, 11008, 16, 4096), 1);
    assert_eq!((c.name.as_str(), c.align), ("gemm_dmma90_f64_tu_tn", [false; 2]));
    let c = choose(&Gemm::new(N, N, 16, 11008, 4096).ld(17, 4096, 16), 0);
    assert_eq!((c.name.as_str(), c.align), ("gemm_dmma90_f64_hu_nn", [false; 2]));
    // Aligned: the 16-byte kernel.
    assert_eq!(
        choose(&Gemm::new(T, N, 11008, 16, 4096), 0).name,
        "gemm_dmma90_f64_t_tn"
    );
    // Mid sizes (1/m + 1/n >= 1/1536): the square tiles' 8-byte variants; large ones: the
    // aligned copy and the 16-byte kernel.
    let c = choose(&Gemm::new(T, N, 1024, 1024, 1024), 1);
    assert_eq!((c.name.as_str(), c.align), ("gemm_dmma90_f64_mu_tn", [false; 2]));
    let c = choose(&Gemm::new(N, N, 321, 12345, 4567).ld(321, 4567, 321), 0);
    assert!(c.name.ends_with("u_nn") && c.align == [false; 2], "{c:?}");
    let c = choose(&Gemm::new(T, N, 4097, 4097, 4097), 1);
    assert!(c.align[0] || c.align[1], "{c:?}");
    assert!(!c.name.ends_with("u_tn"), "{c:?}");
}

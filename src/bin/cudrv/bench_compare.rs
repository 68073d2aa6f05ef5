//! What the BLAS benches compare cudrv against cuBLAS with: the element types (their cuBLAS
//! data type and host conversions), each type's bound on the difference of the two results,
//! the ratio and peak cells of a row, and the per-type summary (geometric mean, worst, rows
//! below a floor) that `bench gemm --suite` and `bench gemv --suite` end with.

use cudrv::blas::{GemmType, Kernel, SplitK, Tile};
use half::{bf16, f16};

use crate::cublas;

/// A GEMM element type for the bench: the cuBLAS data type and scalar bytes.
pub(crate) trait BenchType: GemmType + Copy {
    const CUDA_TYPE: i32;
    fn from_f64(x: f64) -> Self;
    fn to_f64(self) -> f64;
    /// `x` as this type's alpha / beta.
    fn scalar(x: f64) -> Self::Scalar;
}
impl BenchType for f32 {
    const CUDA_TYPE: i32 = cublas::R_32F;
    fn scalar(x: f64) -> Self::Scalar {
        x as f32
    }
    fn from_f64(x: f64) -> Self {
        x as f32
    }
    fn to_f64(self) -> f64 {
        self as f64
    }
}
impl BenchType for f64 {
    const CUDA_TYPE: i32 = cublas::R_64F;
    fn scalar(x: f64) -> Self::Scalar {
        x
    }
    fn from_f64(x: f64) -> Self {
        x
    }
    fn to_f64(self) -> f64 {
        self
    }
}
/// The 16-bit types: f32 scalars, conversions through `half`.
macro_rules! half_bench_type {
    ($t:ident, $cuda:expr) => {
        impl BenchType for $t {
            const CUDA_TYPE: i32 = $cuda;
            fn scalar(x: f64) -> Self::Scalar {
                x as f32
            }
            fn from_f64(x: f64) -> Self {
                $t::from_f64(x)
            }
            fn to_f64(self) -> f64 {
                $t::to_f64(self)
            }
        }
    };
}
half_bench_type!(f16, cublas::R_16F);
half_bench_type!(bf16, cublas::R_16BF);

/// A suite's summary: per type, the rows with a cuBLAS figure (`(type, ratio, what)`), their
/// geometric mean ratio, the worst one and what it was, and how many fall below `floor`.
pub(crate) fn print_summary(types: &[String], rows: &[(String, f64, String)], floor: f64) {
    println!(
        "\n{:<5} {:>5} {:>8} {:>7} {:>7}  worst case",
        "type",
        "cases",
        "geomean",
        "worst",
        format!("<{floor}x")
    );
    for ty in types {
        let mine: Vec<&(String, f64, String)> = rows.iter().filter(|r| &r.0 == ty).collect();
        let Some(worst) = mine.iter().min_by(|a, b| a.1.total_cmp(&b.1)) else {
            println!("{ty:<5} no cuBLAS figures");
            continue;
        };
        let geomean = (mine.iter().map(|r| r.1.ln()).sum::<f64>() / mine.len() as f64).exp();
        let below = mine.iter().filter(|r| r.1 < floor).count();
        println!(
            "{ty:<5} {:>5} {geomean:>8.3} {:>7.3} {below:>7}  {}",
            mine.len(),
            worst.1,
            worst.2
        );
    }
}

/// The largest relative difference from cuBLAS's result a row of type `ty` with depth `k` may
/// show: the types' rounding, and for exact f32 its growth with sqrt(k) past 1024.
pub(crate) fn diff_bound(ty: &str, k: usize) -> f64 {
    match ty {
        "f32" | "f32x3" => 1e-5 * (k as f64 / 1024.0).sqrt().max(1.0),
        "f64" => 1e-12,
        "tf32" => 5e-3,
        _ => 2e-2,
    }
}

/// The cuBLAS TFLOP/s, ratio, % of peak (H100 only) and diff cells of a bench row.
pub(crate) fn ratio_cells(ty: &str, h100: bool, ours: f64, theirs: Option<f64>, diff: Option<f64>) -> [String; 4] {
    [
        theirs.map_or("-".into(), |t| format!("{t:.2}")),
        theirs.map_or("-".into(), |t| format!("{:.3}", ours / t)),
        if h100 {
            format!("{:.1}", 100.0 * ours / peak(ty))
        } else {
            "-".into()
        },
        diff.map_or("-".into(), |d| format!("{d:.1e}")),
    ]
}

/// H100 SXM datasheet peaks, TFLOP/s (docs/PERFORMANCE.md, ANCHORS.md).
/// ‖ours − theirs‖ / ‖theirs‖ (infinite when a result is not finite).
pub(crate) fn rel_diff<T: BenchType>(ours: &[T], theirs: &[T]) -> f64 {
    let (mut d, mut r) = (0.0f64, 0.0f64);
    for (&p, &q) in ours.iter().zip(theirs) {
        let (p, q) = (p.to_f64(), q.to_f64());
        d += (p - q) * (p - q);
        r += q * q;
    }
    if d.is_finite() {
        (d / r.max(1e-300)).sqrt()
    } else {
        f64::INFINITY
    }
}

/// Datasheet peak TFLOP/s of an H100 SXM for a bench type (the %peak column).
fn peak(ty: &str) -> f64 {
    match ty {
        "f32" => 67.0,
        "tf32" => 494.7,
        // Three tf32 products per f32 product.
        "f32x3" => 494.7 / 3.0,
        "f16" | "bf16" => 989.4,
        _ => 67.0,
    }
}

/// A forced tile as the bench rows write it: its first letter (`a` for Auto).
pub(crate) fn tile_letter(tile: Tile) -> char {
    format!("{tile:?}").chars().next().unwrap_or('?').to_ascii_lowercase()
}

/// A forced split as the bench rows write it after the tile: `/parts`, `/pN` (N partial
/// products), `/1` (no split), nothing for Auto.
pub(crate) fn split_suffix(split: SplitK) -> String {
    match split {
        SplitK::Auto => String::new(),
        SplitK::Off => "/1".into(),
        SplitK::Parts(p) => format!("/{p}"),
        SplitK::Partials(p) => format!("/p{p}"),
    }
}

/// A kernel family as `--kernels` names it.
pub(crate) fn kernel_label(kernel: Kernel) -> &'static str {
    match kernel {
        Kernel::Auto => "auto",
        Kernel::Simt => "simt",
        Kernel::TensorCore => "tc",
        Kernel::MmaSync => "mma",
        Kernel::Wgmma => "wgmma",
    }
}

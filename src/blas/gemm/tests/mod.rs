//! Unit tests of GEMM planning and dispatch (no GPU): planning and its errors here; the kernel
//! choice in `dispatch`, the aligned copies in `aligned_copies`, the GEMV route in `vector_route`.

use super::builder::Plan;
use super::choice::{Choice, Family};
use super::dispatch::choose_kernel;
use super::wg_tiles::WG_MAX_PARTS;
use super::*;
use crate::blas::{Activation, Layout, MathMode, Transpose};
use crate::error::Result;

#[test]
fn wgmma_activation_modules_are_in_the_manifest() {
    use crate::blas::Activation;
    let manifest = include_str!("../../../../ptx/MANIFEST");
    assert!(Activation::None.op().is_none());
    for a in [
        Activation::Relu,
        Activation::Gelu,
        Activation::Sigmoid,
        Activation::Tanh,
    ] {
        let name = a.op().unwrap().name();
        assert_eq!(format!("{a:?}").to_lowercase(), name);
        for t in ["f16", "bf16", "tf32"] {
            let module = format!("gemm_wg_{name}_{t}");
            assert!(
                manifest
                    .lines()
                    .any(|l| l.split_whitespace().next() == Some(module.as_str())),
                "{module} is not in ptx/MANIFEST"
            );
        }
    }
}

/// `choose_kernel` on an H100 (compute capability 9.0, 132 multiprocessors), one batch,
/// automatic k split.
#[allow(clippy::too_many_arguments)]
fn on_h100(
    type_name: &str,
    tensor_type: bool,
    math: MathMode,
    forced: Kernel,
    tile: Tile,
    plan: &Plan,
    aligned: bool,
    wgmma_ok: bool,
) -> Result<Choice> {
    choose_kernel(
        type_name,
        tensor_type,
        math,
        forced,
        tile,
        SplitK::Auto,
        plan,
        aligned,
        wgmma_ok,
        (9, 0),
        132,
        1,
        false,
    )
}

/// `choose_kernel` on an H100 for `batch` products of aligned operands the TMA can address:
/// `ty` is the type's name, "tf32" for f32 with tf32 math.
#[allow(clippy::too_many_arguments)]
fn on_h100_batched(
    ty: &str,
    forced: Kernel,
    tile: Tile,
    split: SplitK,
    plan: &Plan,
    batch: usize,
    activation: bool,
) -> Result<Choice> {
    let math = if ty == "tf32" { MathMode::Tf32 } else { MathMode::Exact };
    let ty = if ty == "tf32" { "f32" } else { ty };
    choose_kernel(
        ty,
        ty != "f32",
        math,
        forced,
        tile,
        split,
        plan,
        true,
        true,
        (9, 0),
        132,
        batch,
        activation,
    )
}

fn plan(g: &Gemm<f32>, lens: [usize; 3]) -> Result<Plan> {
    g.plan(lens, None)
}

#[test]
fn tight_leading_dimensions_follow_the_layout() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::T, 3, 4, 5);
    assert_eq!(g.lds(), [3, 4, 3]);
    let g = g.layout(Layout::RowMajor);
    assert_eq!(g.lds(), [5, 5, 4]);
}

#[test]
fn short_buffers_and_small_leading_dimensions_are_rejected_with_numbers() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
    assert!(plan(&g, [15, 20, 12]).is_ok());
    let e = plan(&g, [14, 20, 12]).unwrap_err().to_string();
    assert!(e.contains("A has 14 elements") && e.contains("needs 15"), "{e}");
    let e = plan(&g, [15, 20, 11]).unwrap_err().to_string();
    assert!(e.contains("C has 11 elements"), "{e}");
    let e = plan(&g.ld(2, 5, 3), [100, 100, 100]).unwrap_err().to_string();
    assert!(
        e.contains("ldA = 2") && e.contains("(3,") || e.contains("rows of A (3"),
        "{e}"
    );
    let e = plan(&g.ld(3, 5, 2), [100, 100, 100]).unwrap_err().to_string();
    assert!(e.contains("ldC = 2"), "{e}");
    // ld > rows: the last column ends at (cols - 1) * ld + rows.
    assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 3, 20, 12]).is_ok());
    assert!(plan(&g.ld(7, 5, 3), [4 * 7 + 2, 20, 12]).is_err());
}

#[test]
fn batches_need_room_and_disjoint_outputs() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 2, 2, 2).batched(3, 4, 0, 4);
    assert!(plan(&g, [12, 4, 12]).is_ok());
    let e = plan(&g, [11, 4, 12]).unwrap_err().to_string();
    assert!(e.contains("3 matrices") && e.contains("need 12"), "{e}");
    let g = g.batched(3, 4, 0, 3);
    let e = plan(&g, [12, 4, 12]).unwrap_err().to_string();
    assert!(e.contains("overlap"), "{e}");
}

#[test]
fn empty_problems_need_no_memory() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 0, 5, 7);
    assert!(plan(&g, [0, 35, 0]).is_ok());
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 2, 0);
    assert!(plan(&g, [0, 0, 6]).is_ok());
}

#[test]
fn overflow_is_an_error_not_a_panic() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, usize::MAX / 2, 4, 5);
    assert!(plan(&g, [1, 1, 1]).is_err());
}

#[test]
fn bias_length_is_checked() {
    let g = Gemm::<f32>::new(Transpose::N, Transpose::N, 3, 4, 5);
    assert!(g.plan([15, 20, 12], Some(3)).is_ok());
    assert!(g.plan([15, 20, 12], Some(2)).is_err());
    let g = g.layout(Layout::RowMajor);
    assert!(g.plan([15, 20, 12], Some(3)).is_err());
    assert!(g.plan([15, 20, 12], Some(4)).is_ok());
}

#[test]
fn the_row_major_problem_maps_onto_the_kernels_form() {
    let g = Gemm::<f32>::new(Transpose::T, Transpose::N, 3, 4, 5);
    let p = plan(&g, [100, 100, 100]).unwrap();
    assert_eq!((p.ops, p.m, p.n, p.swapped), ("tn", 4, 3, true));
    let p = plan(&g.layout(Layout::RowMajor), [100, 100, 100]).unwrap();
    assert_eq!((p.ops, p.m, p.n, p.swapped), ("nt", 3, 4, false));
}

mod degenerate {
    use super::*;

    #[test]
    fn k_zero_plans_with_empty_operands() {
        for ta in [Transpose::N, Transpose::T] {
            for tb in [Transpose::N, Transpose::T] {
                for layout in [Layout::ColMajor, Layout::RowMajor] {
                    let g = Gemm::<f32>::new(ta, tb, 3, 4, 0).layout(layout);
                    let r = g.plan([0, 0, 12], None);
                    assert!(r.is_ok(), "{ta:?}{tb:?} {layout:?}: {r:?}");
                }
            }
        }
    }
}

/// The automatic choice (`choose_on`) for `g` on an H100 (compute capability 9.0, 132
/// multiprocessors) whose f64 tensor cores take exact f32 when `f64_cores`: A at 0, B at `b`,
/// on buffers long enough for every problem of these tests.
fn choose_on_h100<T: GemmType + Copy + From<u8> + Into<f64>>(g: &Gemm<T>, b: u64, f64_cores: bool) -> Choice {
    let plan = g.plan([1 << 30; 3], None).unwrap();
    let p = g.params(&plan, [0, b, 0], 0);
    super::dispatch::choose_on::<T, T>(g, &plan, &p, (9, 0), 132, f64_cores).expect("choice")
}

mod aligned_copies;
mod choice_memo;
mod dispatch;
mod dmma_element_q_route;
mod dmma_s2_route;
mod dmma_u2_route;
mod f32_dmma_route;
mod partials_route;
mod selftest_names;
mod shared_memory_fit;
mod skinny90_route;
mod skinny_route;
mod tf32x3_route;
mod vector_route;
mod wg_dispatch;
mod wg_in_place_route;

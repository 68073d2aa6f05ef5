//! The selftest's checks of the wgmma kernels that read unaligned f16 / bf16 operands where they
//! lie (`gemm_wgu_<type>_<tile>_<ops>`, src/blas/gemm/wg_in_place.rs), which dispatch runs for
//! batches at short k: each type, tile and op pair on a batch of 3 whose operands' leading
//! dimensions are 1 and 3 elements longer than the matrices, through the fuzz test's case runner
//! (an f64 reference on sampled entries, run twice and compared, padding checked). A check
//! covers its kernel when it passed and ran that kernel.

use std::collections::BTreeSet;
use std::sync::Arc;

use super::blas::ACTIVATIONS;
use super::fuzz::{self, FuzzType, GemmCase};
use super::{letter_of, Check, Rng};
use crate::blas::{Kernel, Layout, SplitK, Tile, Transpose};
use crate::error::Error;
use crate::stream::Stream;

/// The tiles checked: (tile, kernel letter, m x n x k), m and n past a whole tile on each side
/// so the last tiles are partial, k a partial k-tile within the tile's limit (`in_place_pays`).
pub(crate) const TILES: [(Tile, &str, (usize, usize, usize)); 2] =
    [(Tile::Half, "h", (72, 136, 60)), (Tile::Narrow, "n", (136, 72, 30))];

/// Adds one check per type, tile and op pair to `out` (sm_90 only: the caller asks).
pub(super) fn checks(stream: &Arc<Stream>, rng: &mut Rng, out: &mut Vec<Check>, covered: &mut BTreeSet<String>) {
    use Transpose::{N, T};
    for ty in [FuzzType::F16, FuzzType::Bf16] {
        for (tile, letter, dims) in TILES {
            for ops in [(N, N), (N, T), (T, N), (T, T)] {
                let case = GemmCase {
                    ty,
                    ops,
                    dims,
                    layout: Layout::ColMajor,
                    ld_pad: [1, 3, 1],
                    batch: 3,
                    strides: (None, None, 0),
                    offsets: [0; 3],
                    scalars: (0.75, -0.5),
                    bias: true,
                    act: ACTIVATIONS[out.len() % ACTIVATIONS.len()],
                    knobs: (Kernel::Wgmma, tile, SplitK::Auto),
                    tf32_exact_inputs: false,
                };
                let want = format!(
                    "gemm_wgu_{}_{letter}_{}{}",
                    ty.name(),
                    letter_of(ops.0),
                    letter_of(ops.1)
                );
                let result = fuzz::gemm_case(stream, &case, 2, rng.next_u64()).and_then(|r| {
                    match (r.failures.first(), r.kernels.keys().next()) {
                        (Some(f), _) => Err(Error::InvalidArgument(format!("[{}] {}", f.kernel, f.detail))),
                        (None, Some(k)) if *k != want => Err(Error::InvalidArgument(format!("ran {k}"))),
                        _ => Ok(r.worst),
                    }
                });
                // The fuzz runner's error is relative to its bound: passing is at most 1.
                Check::new(format!("gemm {want}"), case.to_string(), 1.0, result).record(out, covered, [want]);
            }
        }
    }
}

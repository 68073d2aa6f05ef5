//! GEMM: `C = act(alpha * op(A) * op(B) + beta * C + bias)`, plain and strided-batched.
//!
//! [`Gemm`] describes one problem ([`builder`](self) checks it against the buffers), dispatch
//! picks a kernel family, tile and split for it, and launch queues it.

mod builder;
mod choice;
mod choice_cache;
mod dispatch;
mod dmma90;
mod f32_tiles;
mod functions;
mod launch;
mod operand_copies;
mod options;
mod params;
mod partials;
mod skinny;
mod skinny90;
mod tf32_operands;
mod tf32x3;
mod thin;
mod types;
mod vector;
mod wg_choice;
mod wg_in_place;
mod wg_tiles;

pub use builder::Gemm;
pub use functions::{gemm, gemm_strided_batched, matmul};
pub use options::{Kernel, SplitK, Tile};
pub use types::GemmType;
pub(crate) use wg_in_place::{IN_PLACE_MAX_K, IN_PLACE_MAX_K_NARROW};

#[cfg(test)]
mod tests;

//! A per-thread memo of the tiled kernels' choice ([`super::dispatch::choose_on`]), so that a
//! GEMM repeated on the same shape pays one hash lookup for its dispatch instead of the
//! choice's arithmetic and the formatting of its kernel name.
//!
//! The choice is a pure function of what [`Key`] holds: the element type and knobs, the plan
//! (shape, ops, leading dimensions, strides), the batch, whether an activation is applied,
//! whether A and B are read (`k` after alpha), each operand address modulo 16 (alignment is the
//! only thing dispatch reads of an address), and the device's compute capability and
//! multiprocessor count. Nothing else (contexts, streams, the environment) enters it, so one
//! entry serves every context on a device of the same kind and no entry keeps a context alive.
//! Errors are not memoized.

use std::cell::RefCell;
use std::sync::Arc;

use rustc_hash::FxHashMap;

use super::builder::{Gemm, Plan};
use super::choice::Choice;
use super::params::GemmParams;
use super::{GemmType, Kernel, SplitK, Tile};
use crate::blas::MathMode;
use crate::error::Result;

/// Entries kept per thread; past this the memo starts over (a program cycles through far fewer
/// GEMM shapes than this; one that does not pays the choice's cost, as without the memo).
const CAPACITY: usize = 512;

/// Everything the choice depends on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub(crate) struct Key {
    pub type_name: &'static str,
    pub math: MathMode,
    pub kernel: Kernel,
    pub tile: Tile,
    pub split: SplitK,
    pub batch: usize,
    pub ops: &'static str,
    pub swapped: bool,
    /// Plan m, n, k; then the kernels' k (0 when alpha is 0: A and B are not read).
    pub mnk: [usize; 3],
    pub k_read: i64,
    /// Plan ldx, ldy, ldd, sx, sy, sd.
    pub strides: [usize; 6],
    /// The X and Y addresses modulo 16.
    pub misalign: [u8; 2],
    /// Whether the epilogue applies an activation (the 128 x 192 wgmma tile has no twin in the
    /// activation modules).
    pub activation: bool,
    pub cc: (u32, u32),
    pub sms: usize,
    /// Whether exact f32 runs on the device's f64 tensor cores (`dmma90::f32_on_f64_cores`).
    pub f64_cores: bool,
}

impl Key {
    /// The key of `g`'s choice for `plan` and `params` on a device of capability `cc` with `sms`
    /// multiprocessors.
    pub(crate) fn new<T: GemmType, S>(
        g: &Gemm<S>,
        plan: &Plan,
        params: &GemmParams,
        cc: (u32, u32),
        sms: usize,
        f64_cores: bool,
    ) -> Key {
        Key {
            type_name: T::NAME,
            math: g.math,
            kernel: g.kernel,
            tile: g.tile,
            split: g.split,
            batch: g.batch,
            ops: plan.ops,
            swapped: plan.swapped,
            mnk: [plan.m, plan.n, plan.k],
            k_read: params.k,
            strides: [plan.ldx, plan.ldy, plan.ldd, plan.sx, plan.sy, plan.sd],
            misalign: [(params.x % 16) as u8, (params.y % 16) as u8],
            activation: g.activation.op().is_some(),
            cc,
            sms,
            f64_cores,
        }
    }
}

thread_local! {
    static CHOICES: RefCell<FxHashMap<Key, Arc<Choice>>> = RefCell::new(FxHashMap::default());
}

/// The memoized choice for `key`, or `choose()`'s answer, remembered when it is `Ok`.
pub(crate) fn get_or_choose(key: Key, choose: impl FnOnce() -> Result<Choice>) -> Result<Arc<Choice>> {
    if let Some(hit) = CHOICES.with(|c| c.borrow().get(&key).cloned()) {
        return Ok(hit);
    }
    let choice = Arc::new(choose()?);
    CHOICES.with(|c| {
        let mut map = c.borrow_mut();
        if map.len() >= CAPACITY {
            map.clear();
        }
        map.insert(key, choice.clone());
    });
    Ok(choice)
}

/// Entries held by this thread's memo (tests).
#[cfg(test)]
pub(crate) fn len() -> usize {
    CHOICES.with(|c| c.borrow().len())
}

//! Operation scopes: what a cudrv operation (a GEMM, a GEMV) tells the profiler and NVTX about
//! the launches it makes. Inside a scope, the profiler keys each launch by the operation's
//! label and the kernel's name and credits it with the operation's work (FLOPs, bytes), and
//! an NVTX range with the label spans the operation. With the profiler off and no NVTX tool
//! attached, entering a scope costs two atomic loads and builds no label.

use std::cell::RefCell;
use std::sync::Arc;

use crate::context::Context;
use crate::nvtx;

/// An operation: its label and its work.
#[derive(Debug)]
pub(crate) struct Op {
    /// e.g. "gemm f32 nn 4096x4096x4096".
    pub label: String,
    /// Floating-point operations (0: unknown).
    pub flops: f64,
    /// Bytes it has to move at least (0: unknown).
    pub bytes: f64,
    /// Whether a launch has been credited with the work (the first launch of the operation
    /// is; a split product's reduction, for one, is not).
    pub credited: std::sync::atomic::AtomicBool,
}

thread_local! {
    static CURRENT: RefCell<Option<Arc<Op>>> = const { RefCell::new(None) };
}

/// The operation whose scope this thread is in, if the profiler asked for it.
pub(crate) fn current() -> Option<Arc<Op>> {
    CURRENT.with(|c| c.borrow().clone())
}

/// An entered scope; leaves when dropped.
pub(crate) struct OpScope {
    _range: Option<nvtx::Range>,
    /// The scope it replaced, when this one set the profiler's label.
    previous: Option<Option<Arc<Op>>>,
}

impl OpScope {
    /// Enters the scope of the operation `describe` gives (called only when the profiler is on
    /// or an NVTX tool is attached).
    #[inline]
    pub fn enter(ctx: &Context, describe: impl FnOnce() -> Op) -> OpScope {
        let profiling = ctx.profiler().enabled();
        let ranges = nvtx::enabled();
        if !profiling && !ranges {
            return OpScope {
                _range: None,
                previous: None,
            };
        }
        let op = describe();
        let range = ranges.then(|| nvtx::Range::push(&op.label));
        let previous = profiling.then(|| CURRENT.with(|c| c.replace(Some(Arc::new(op)))));
        OpScope {
            _range: range,
            previous,
        }
    }
}

impl Drop for OpScope {
    fn drop(&mut self) {
        if let Some(previous) = self.previous.take() {
            CURRENT.with(|c| *c.borrow_mut() = previous);
        }
    }
}

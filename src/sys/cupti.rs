//! libcupti's activity API, loaded at run time: the few entry points the profiler uses to read
//! kernel start and end times that the driver writes as the kernels run, with no event per
//! launch. Absent or unusable, [`library`] says why and the profiler times with events.
//!
//! Tried at `$CUDRV_LIBCUPTI` alone when it is set; otherwise `libcupti.so`, `libcupti.so.13`,
//! `libcupti.so.12` on the loader's path, then the CUDA toolkit's own directories.
//!
//! ```
//! // On a machine without CUPTI this is an error naming what was tried, never a panic.
//! let lib = cudrv::sys::cupti::library();
//! assert!(lib.is_ok() || !lib.unwrap_err().is_empty());
//! ```

use std::ffi::{c_char, c_void};
use std::sync::OnceLock;

use super::{CUcontext, CUstream};

/// `CUDRV_LIBCUPTI`: the CUPTI library to load, and no other.
pub const LIBCUPTI_ENV: &str = "CUDRV_LIBCUPTI";

/// `CUptiResult`: 0 is success.
pub type CuptiResult = i32;
/// `CUPTI_SUCCESS`.
pub const SUCCESS: CuptiResult = 0;
/// `CUPTI_ACTIVITY_KIND_CONCURRENT_KERNEL`: kernels, timed without serializing them.
pub const KIND_CONCURRENT_KERNEL: u32 = 10;
/// `CUPTI_ACTIVITY_FLAG_FLUSH_FORCED` for [`Cupti::flush_all`]: also the buffers still filling.
pub const FLUSH_FORCED: u32 = 1;

/// Called by CUPTI for an empty record buffer: `(buffer, size, max_records)`.
pub type BufferRequested = unsafe extern "C" fn(*mut *mut u8, *mut usize, *mut usize);
/// Called by CUPTI with a filled buffer: `(context, stream_id, buffer, size, valid_bytes)`.
pub type BufferCompleted = unsafe extern "C" fn(CUcontext, u32, *mut u8, usize, usize);

type RegisterFn = unsafe extern "C" fn(BufferRequested, BufferCompleted) -> CuptiResult;
type KindFn = unsafe extern "C" fn(u32) -> CuptiResult;
type FlushFn = unsafe extern "C" fn(u32) -> CuptiResult;
type NextFn = unsafe extern "C" fn(*mut u8, usize, *mut *mut c_void) -> CuptiResult;
type StreamIdFn = unsafe extern "C" fn(CUcontext, CUstream, u8, *mut u64) -> CuptiResult;
type ContextIdFn = unsafe extern "C" fn(CUcontext, *mut u32) -> CuptiResult;
type TimestampFn = unsafe extern "C" fn(*mut u64) -> CuptiResult;

/// The loaded library's entry points.
pub struct Cupti {
    register: RegisterFn,
    enable: KindFn,
    disable: KindFn,
    flush: FlushFn,
    next: NextFn,
    stream_id: StreamIdFn,
    context_id: ContextIdFn,
    timestamp: TimestampFn,
    path: String,
    _lib: libloading::Library,
}

impl std::fmt::Debug for Cupti {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Cupti")
            .field("path", &self.path)
            .finish_non_exhaustive()
    }
}

/// A kernel's activity record, the fields the profiler reads.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct KernelRecord {
    /// Start and end on CUPTI's clock (ns, the clock of [`Cupti::timestamp`]).
    pub start: u64,
    /// See `start`.
    pub end: u64,
    /// CUPTI's id of the launch's context ([`Cupti::context_id`]).
    pub context_id: u32,
    /// CUPTI's id of the launch's stream ([`Cupti::stream_id`]).
    pub stream_id: u32,
    /// The driver call's correlation id: increases with every driver call of the process.
    pub correlation_id: u32,
    /// The kernel's (mangled) name, owned by CUPTI.
    pub name: *const c_char,
}

// Byte offsets in CUPTI's concurrent-kernel record. They are the same from `CUpti_ActivityKernel4`
// (CUDA 9) to `CUpti_ActivityKernel9` and later: new versions only append fields.
const START: usize = 16;
const END: usize = 24;
const CONTEXT_ID: usize = 44;
const STREAM_ID: usize = 48;
const CORRELATION_ID: usize = 92;
const NAME: usize = 104;

/// Reads a kernel record, or `None` for another kind of record.
///
/// # Safety
/// `record` must point at a complete activity record that CUPTI returned from
/// `cuptiActivityGetNextRecord` (its buffer still alive).
pub unsafe fn kernel_record(record: *const u8) -> Option<KernelRecord> {
    // SAFETY: every activity record starts with its 4-byte kind; a concurrent-kernel record
    // holds at least `NAME + 8` bytes (the caller's contract). Unaligned reads: the buffer is
    // 8-aligned, but nothing here depends on it.
    unsafe {
        let kind = record.cast::<u32>().read_unaligned();
        if kind != KIND_CONCURRENT_KERNEL {
            return None;
        }
        let at_u64 = |o: usize| record.add(o).cast::<u64>().read_unaligned();
        let at_u32 = |o: usize| record.add(o).cast::<u32>().read_unaligned();
        Some(KernelRecord {
            start: at_u64(START),
            end: at_u64(END),
            context_id: at_u32(CONTEXT_ID),
            stream_id: at_u32(STREAM_ID),
            correlation_id: at_u32(CORRELATION_ID),
            name: record.add(NAME).cast::<*const c_char>().read_unaligned(),
        })
    }
}

/// The libraries tried in order: the `CUDRV_LIBCUPTI` override alone if it is set (a library
/// asked for by path is that one or none, as with `CUDRV_LIBCUDA`), else the usual names on the
/// loader's path and the toolkit's directories.
fn candidates() -> Vec<String> {
    if let Some(path) = super::loader::named_by(LIBCUPTI_ENV) {
        return vec![path];
    }
    let mut names: Vec<String> = ["libcupti.so", "libcupti.so.13", "libcupti.so.12"]
        .map(String::from)
        .to_vec();
    for dir in [
        "/usr/local/cuda/extras/CUPTI/lib64",
        "/usr/local/cuda/targets/x86_64-linux/lib",
        "/usr/local/cuda/lib64",
    ] {
        names.push(format!("{dir}/libcupti.so"));
    }
    names
}

fn load() -> Result<Cupti, String> {
    let resolve = |name: &str, lib: libloading::Library| {
        macro_rules! sym {
            ($name:literal) => {
                // SAFETY: each symbol has the C signature of its type alias in every CUPTI since
                // CUDA 11 (the field's type says which).
                match unsafe { lib.get(concat!($name, "\0").as_bytes()) } {
                    Ok(s) => *s,
                    Err(_) => return Err(format!("{name} has no {}", $name)),
                }
            };
        }
        Ok(Cupti {
            register: sym!("cuptiActivityRegisterCallbacks"),
            enable: sym!("cuptiActivityEnable"),
            disable: sym!("cuptiActivityDisable"),
            flush: sym!("cuptiActivityFlushAll"),
            next: sym!("cuptiActivityGetNextRecord"),
            stream_id: sym!("cuptiGetStreamIdEx"),
            context_id: sym!("cuptiGetContextId"),
            timestamp: sym!("cuptiGetTimestamp"),
            path: name.to_string(),
            _lib: lib,
        })
    };
    // SAFETY: loading libcupti runs its initialisers, which have no preconditions.
    unsafe { super::loader::open_first("CUPTI", &candidates(), resolve) }
}

/// The process's CUPTI, loaded on first use; a failure is remembered.
pub fn library() -> Result<&'static Cupti, String> {
    static CUPTI: OnceLock<Result<Cupti, String>> = OnceLock::new();
    CUPTI.get_or_init(load).as_ref().map_err(Clone::clone)
}

fn check(code: CuptiResult, what: &str) -> Result<(), String> {
    if code == SUCCESS {
        Ok(())
    } else {
        Err(format!("{what} failed (CUPTI error {code})"))
    }
}

impl Cupti {
    /// The name or path the library was loaded from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// `cuptiActivityRegisterCallbacks`.
    ///
    /// # Safety
    /// The callbacks must follow CUPTI's contract: `requested` hands out 8-byte aligned buffers
    /// that stay alive until `completed` receives them; neither may unwind.
    pub unsafe fn register(&self, requested: BufferRequested, completed: BufferCompleted) -> Result<(), String> {
        // SAFETY: the caller's contract.
        check(
            unsafe { (self.register)(requested, completed) },
            "cuptiActivityRegisterCallbacks",
        )
    }

    /// `cuptiActivityEnable(kind)`.
    pub fn enable(&self, kind: u32) -> Result<(), String> {
        // SAFETY: takes a kind number; an unknown one is an error code.
        check(unsafe { (self.enable)(kind) }, "cuptiActivityEnable")
    }

    /// `cuptiActivityDisable(kind)`.
    pub fn disable(&self, kind: u32) -> Result<(), String> {
        // SAFETY: as `enable`.
        check(unsafe { (self.disable)(kind) }, "cuptiActivityDisable")
    }

    /// `cuptiActivityFlushAll(flags)`: hands the buffers to the completion callback (on this
    /// thread).
    pub fn flush_all(&self, flags: u32) -> Result<(), String> {
        // SAFETY: takes a flags word.
        check(unsafe { (self.flush)(flags) }, "cuptiActivityFlushAll")
    }

    /// Every record of a completed buffer's `valid` bytes, in buffer order.
    ///
    /// # Safety
    /// `buffer` must be a buffer CUPTI passed to the completion callback, `valid` its valid
    /// size, both unchanged.
    pub unsafe fn records(&self, buffer: *mut u8, valid: usize, mut each: impl FnMut(*const u8)) {
        let mut record: *mut c_void = std::ptr::null_mut();
        loop {
            // SAFETY: the caller's contract; `record` is CUPTI's cursor, null to start.
            let code = unsafe { (self.next)(buffer, valid, &mut record) };
            if code != SUCCESS || record.is_null() {
                break;
            }
            each(record as *const u8);
        }
    }

    /// CUPTI's id of `stream` in `ctx` (`cuptiGetStreamIdEx`; a per-thread stream handle when
    /// `per_thread`).
    ///
    /// # Safety
    /// `ctx` and `stream` must be live handles.
    pub unsafe fn stream_id(&self, ctx: CUcontext, stream: CUstream, per_thread: bool) -> Result<u32, String> {
        let mut id = 0u64;
        // SAFETY: the caller's contract; writes one u64.
        let code = unsafe { (self.stream_id)(ctx, stream, u8::from(per_thread), &mut id) };
        check(code, "cuptiGetStreamIdEx")?;
        Ok(id as u32)
    }

    /// CUPTI's id of `ctx` (`cuptiGetContextId`).
    ///
    /// # Safety
    /// `ctx` must be a live context.
    pub unsafe fn context_id(&self, ctx: CUcontext) -> Result<u32, String> {
        let mut id = 0u32;
        // SAFETY: the caller's contract; writes one u32.
        check(unsafe { (self.context_id)(ctx, &mut id) }, "cuptiGetContextId")?;
        Ok(id)
    }

    /// Now on the clock of the records' start and end (ns).
    pub fn timestamp(&self) -> Result<u64, String> {
        let mut t = 0u64;
        // SAFETY: writes one u64.
        check(unsafe { (self.timestamp)(&mut t) }, "cuptiGetTimestamp")?;
        Ok(t)
    }
}

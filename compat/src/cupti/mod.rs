//! cudarc's `cupti` module (feature `cupti`): CUPTI's callback and activity APIs, with libcupti
//! loaded at run time like libcuda.
//!
//! [`sys`] has the raw types and functions, [`result`] one function per call returning
//! `Result<_, CuptiError>`, with cudarc 0.19's names and signatures. Without libcupti every call
//! is an error ([`sys::load_error`] says what was tried), never a panic.
//!
//! ```no_run
//! use cudrv_compat::imp::cupti::{result, sys};
//! result::activity::enable(sys::CUpti_ActivityKind::CUPTI_ACTIVITY_KIND_KERNEL)?;
//! // ... launch work, then:
//! result::activity::flush_all(0)?;
//! # Ok::<(), result::CuptiError>(())
//! ```

pub mod result;
pub mod sys;

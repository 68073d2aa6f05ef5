//! Finding and opening the driver library, and resolving entry points lazily.
//!
//! The library is opened once per process, on the first call that needs it, from
//! [`candidates`]; it then stays loaded until the process exits. Each entry point is looked up
//! the first time it is called and cached in its own [`SymbolSlot`], so a symbol the installed
//! driver lacks fails only the calls that need it.

use std::ffi::{c_void, CStr};

use once_cell::sync::OnceCell;

/// Why the driver library or one of its entry points could not be had.
///
/// This is the bindings layer's own error: it knows nothing of the safe layer above it, which
/// turns it into `cudrv::Error::NoDriver` or `cudrv::Error::MissingSymbol` (same fields,
/// same messages) through `From`.
///
/// ```
/// use cudrv::sys::loader::LoadError;
/// let e = LoadError::MissingSymbol { name: "cuFoo", library: "libcuda.so.1".into() };
/// assert!(e.to_string().contains("cuFoo"));
/// let converted: cudrv::Error = e.into();
/// assert!(matches!(converted, cudrv::Error::MissingSymbol { name: "cuFoo", .. }));
/// ```
#[derive(Debug, Clone, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum LoadError {
    /// No candidate library could be loaded.
    #[error("no CUDA driver found: could not load {tried} ({reason})")]
    NoDriver {
        /// The library names or paths that were tried, in order.
        tried: String,
        /// The loader's message for the last candidate.
        reason: String,
    },
    /// The loaded library lacks an entry point.
    #[error("the CUDA driver {library} has no entry point `{name}` (this call needs a newer driver)")]
    MissingSymbol {
        /// The symbol, e.g. `cuMemAllocAsync`.
        name: &'static str,
        /// The path of the library that was searched.
        library: String,
    },
}

/// The result type of the loader and of the resolvers in [`crate::sys::resolve`].
pub type Result<T, E = LoadError> = std::result::Result<T, E>;

/// Environment variable naming the driver library to load instead of the system's.
///
/// When it is set, only that path is tried.
pub const LIBCUDA_ENV: &str = "CUDRV_LIBCUDA";

/// The driver library names tried in order: the `CUDRV_LIBCUDA` override alone if it is set,
/// otherwise the platform's names.
///
/// ```
/// let names = cudrv::sys::loader::candidates();
/// assert!(!names.is_empty());
/// ```
pub fn candidates() -> Vec<String> {
    if let Some(path) = named_by(LIBCUDA_ENV) {
        return vec![path];
    }
    if cfg!(windows) {
        vec!["nvcuda.dll".into()]
    } else {
        vec!["libcuda.so.1".into(), "libcuda.so".into()]
    }
}

/// The library path the environment variable `env` names, when it is set and not empty (the
/// override of a library's search: `CUDRV_LIBCUDA`, `CUDRV_LIBCUPTI`, `CUDRV_LIBNVRTC`,
/// `CUDRV_LIBNVTX`, `CUDRV_LIBNVML`, and the benches' `CUDRV_LIBCUBLAS`).
///
/// ```
/// assert_eq!(cudrv::sys::loader::named_by("CUDRV_NO_SUCH_OVERRIDE"), None);
/// ```
pub fn named_by(env: &str) -> Option<String> {
    std::env::var_os(env)
        .filter(|p| !p.is_empty())
        .map(|p| p.to_string_lossy().into_owned())
}

/// An opened driver library.
///
/// Most code never sees this type: the function table in [`crate::sys`] uses the process-wide
/// instance from [`DriverLibrary::global`]. Opening another one is useful for tests and tools
/// that inspect a particular library.
#[derive(Debug)]
pub struct DriverLibrary {
    library: libloading::Library,
    path: String,
}

impl DriverLibrary {
    /// Opens the first library of `names` that loads.
    ///
    /// # Safety
    /// Loading a library runs its initialisers. The caller must trust that the named libraries
    /// are CUDA driver libraries (or compatible fakes) whose initialisers are sound to run.
    ///
    /// ```no_run
    /// // SAFETY: the system's CUDA driver library.
    /// let lib = unsafe { cudrv::sys::loader::DriverLibrary::open(&["libcuda.so.1".to_string()]) };
    /// ```
    pub unsafe fn open(names: &[String]) -> Result<Self> {
        let mut reason = String::from("no candidates");
        for name in names {
            // SAFETY: the caller vouches for the library's initialisers (this fn's contract).
            match unsafe { libloading::Library::new(name) } {
                Ok(library) => {
                    return Ok(Self {
                        library,
                        path: name.clone(),
                    })
                }
                Err(e) => reason = e.to_string(),
            }
        }
        Err(LoadError::NoDriver {
            tried: names.join(", "),
            reason,
        })
    }

    /// The process-wide driver library, opened on first use from [`candidates`].
    ///
    /// A failure is remembered: every later call returns the same [`LoadError::NoDriver`].
    pub fn global() -> Result<&'static DriverLibrary> {
        static GLOBAL: OnceCell<Result<DriverLibrary>> = OnceCell::new();
        GLOBAL
            // SAFETY: the candidates are the CUDA driver's own names or the user's explicit
            // override (`CUDRV_LIBCUDA`); loading the driver is what this crate is for.
            .get_or_init(|| unsafe { DriverLibrary::open(&candidates()) })
            .as_ref()
            .map_err(Clone::clone)
    }

    /// The name or path the library was opened from.
    pub fn path(&self) -> &str {
        &self.path
    }

    /// Looks up `name` (which must end in a NUL byte), returning its address.
    ///
    /// ```no_run
    /// # fn main() -> Result<(), cudrv::sys::loader::LoadError> {
    /// let lib = cudrv::sys::loader::DriverLibrary::global()?;
    /// let addr = lib.symbol("cuInit\0")?;
    /// assert!(!addr.is_null());
    /// # Ok(()) }
    /// ```
    pub fn symbol(&self, name: &'static str) -> Result<*const c_void> {
        let missing = || LoadError::MissingSymbol {
            name: name.trim_end_matches('\0'),
            library: self.path.clone(),
        };
        let cname = CStr::from_bytes_with_nul(name.as_bytes()).map_err(|_| missing())?;
        // SAFETY: we read the symbol's address only; it is never dereferenced as a `*const c_void`.
        // Callers that turn it into a function pointer state the signature they rely on.
        let sym = unsafe { self.library.get::<*const c_void>(cname.to_bytes_with_nul()) };
        match sym {
            Ok(sym) if !sym.is_null() => Ok(*sym),
            _ => Err(missing()),
        }
    }
}

/// Opens the first of `names` that loads and in which `resolve` finds what it needs (it is given
/// the name and the library and returns what it built, or what is missing): the loop of the
/// optional libraries (libcupti, libnvToolsExt). Otherwise an error naming every candidate and
/// the last reason: "no {what} library could be loaded (tried ...; last: ...)".
///
/// # Safety
/// Loading a library runs its initialisers: the caller vouches for the named libraries.
///
/// ```
/// // SAFETY: no library by this name exists; nothing is loaded.
/// let r = unsafe {
///     cudrv::sys::loader::open_first("example", &["libcudrv-no-such.so".to_string()], |_, _| Ok(()))
/// };
/// assert!(r.unwrap_err().starts_with("no example library could be loaded (tried libcudrv-no-such.so; last:"));
/// ```
pub unsafe fn open_first<T>(
    what: &str,
    names: &[String],
    mut resolve: impl FnMut(&str, libloading::Library) -> std::result::Result<T, String>,
) -> std::result::Result<T, String> {
    let mut why = String::from("no candidates");
    for name in names {
        // SAFETY: the caller vouches for the named libraries' initialisers.
        match unsafe { libloading::Library::new(name) } {
            Ok(lib) => match resolve(name, lib) {
                Ok(found) => return Ok(found),
                Err(missing) => why = missing,
            },
            Err(e) => why = format!("{name}: {e}"),
        }
    }
    Err(format!(
        "no {what} library could be loaded (tried {}; last: {why})",
        names.join(", ")
    ))
}

/// A lazily resolved entry point: of the process-wide driver library ([`get`](Self::get)), or
/// of another library opened with [`DriverLibrary::open`] ([`get_in`](Self::get_in), e.g.
/// libcupti).
///
/// The first successful or failed lookup is cached; later calls cost one atomic load.
#[derive(Debug)]
pub struct SymbolSlot {
    name: &'static str,
    address: OnceCell<usize>,
}

impl SymbolSlot {
    /// A slot for `name`, which must end in a NUL byte.
    pub const fn new(name: &'static str) -> Self {
        Self {
            name,
            address: OnceCell::new(),
        }
    }

    /// The symbol's address in the driver library, resolving it on first use.
    ///
    /// A missing library is not cached here (the library's own failure is), so the error names
    /// the right cause on every call.
    #[inline]
    pub fn get(&self) -> Result<*const c_void> {
        match self.address.get() {
            Some(&addr) if addr != 0 => Ok(addr as *const c_void),
            _ => self.resolve(),
        }
    }

    #[cold]
    fn resolve(&self) -> Result<*const c_void> {
        self.get_in(DriverLibrary::global()?)
    }

    /// The symbol's address in `library`, resolving it on first use. A slot serves one
    /// library: the first lookup is cached whichever library it was made in.
    pub fn get_in(&self, library: &DriverLibrary) -> Result<*const c_void> {
        let addr = *self
            .address
            .get_or_init(|| library.symbol(self.name).map_or(0, |p| p as usize));
        if addr == 0 {
            return Err(LoadError::MissingSymbol {
                name: self.name.trim_end_matches('\0'),
                library: library.path().to_string(),
            });
        }
        Ok(addr as *const c_void)
    }
}

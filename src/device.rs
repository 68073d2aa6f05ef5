//! Devices: count, identity, attributes and memory.

use std::ffi::{c_char, CStr};

use crate::driver::{cu, init};
use crate::error::{bail_invalid, Result};
use crate::sys::{self, CUdevice_attribute as Attr};

/// A CUDA device, by ordinal.
///
/// ```no_run
/// for d in 0..cudrv::Device::count()? {
///     let dev = cudrv::Device::get(d)?;
///     println!("{}: {} (sm_{}{})", d, dev.name()?, dev.compute_capability()?.0, dev.compute_capability()?.1);
/// }
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq, Hash)]
pub struct Device {
    ordinal: usize,
    raw: sys::CUdevice,
}

/// The limits a launch is checked against, read once per context.
///
/// ```no_run
/// let limits = cudrv::Device::get(0)?.limits()?;
/// assert_eq!(limits.warp_size, 32);
/// println!("{} SMs, {} MiB L2", limits.multiprocessor_count, limits.l2_cache_bytes >> 20);
/// # Ok::<(), cudrv::Error>(())
/// ```
#[derive(Copy, Clone, Debug, PartialEq, Eq)]
pub struct DeviceLimits {
    /// Most threads in one block.
    pub max_threads_per_block: u32,
    /// Most threads per block along x, y, z.
    pub max_block_dim: [u32; 3],
    /// Most blocks along x, y, z.
    pub max_grid_dim: [u32; 3],
    /// Shared memory a block may use without opting in (bytes).
    pub max_shared_per_block: u32,
    /// Shared memory a block may use after opting in (bytes).
    pub max_shared_per_block_optin: u32,
    /// Number of streaming multiprocessors.
    pub multiprocessor_count: u32,
    /// Threads per warp.
    pub warp_size: u32,
    /// Size of the L2 cache (bytes); 0 if the driver does not report it.
    pub l2_cache_bytes: u32,
    /// Peak memory clock (kHz); 0 if the driver does not report it.
    pub memory_clock_khz: u32,
    /// Width of the memory bus (bits); 0 if the driver does not report it.
    pub memory_bus_bits: u32,
    /// The device's f32 rate over its f64 rate on the CUDA cores (2 on an H100 or A100, 32-64 on
    /// consumer GPUs); 0 if the driver does not report it.
    pub single_to_double_ratio: u32,
}

impl DeviceLimits {
    /// The memory's peak bandwidth in bytes per second (two transfers per clock on every bit of
    /// the bus), or `None` where the driver reports no clock or bus width.
    ///
    /// ```
    /// # use cudrv::DeviceLimits;
    /// // An H100 SXM: 2619 MHz on a 5120-bit bus.
    /// let limits = DeviceLimits {
    ///     max_threads_per_block: 1024, max_block_dim: [1024, 1024, 64],
    ///     max_grid_dim: [i32::MAX as u32, 65535, 65535], max_shared_per_block: 49152,
    ///     max_shared_per_block_optin: 232448, multiprocessor_count: 132, warp_size: 32,
    ///     l2_cache_bytes: 50 << 20, memory_clock_khz: 2_619_000, memory_bus_bits: 5120,
    ///     single_to_double_ratio: 2,
    /// };
    /// let gbs = limits.peak_memory_bandwidth().unwrap() / 1e9;
    /// assert!((gbs - 3352.3).abs() < 0.1, "{gbs}");
    /// ```
    pub fn peak_memory_bandwidth(&self) -> Option<f64> {
        if self.memory_clock_khz == 0 || self.memory_bus_bits == 0 {
            return None;
        }
        Some(2.0 * f64::from(self.memory_clock_khz) * 1e3 * f64::from(self.memory_bus_bits) / 8.0)
    }
}

impl Device {
    /// The number of CUDA devices the driver sees.
    ///
    /// ```no_run
    /// for i in 0..cudrv::Device::count()? {
    ///     println!("{i}: {}", cudrv::Device::get(i)?.name()?);
    /// }
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn count() -> Result<usize> {
        init()?;
        let mut n = 0;
        // SAFETY: writes one int through a valid pointer.
        unsafe { cu!(cuDeviceGetCount(&mut n))? };
        Ok(n.max(0) as usize)
    }

    /// The device with this ordinal; an ordinal past the last device is an invalid argument.
    ///
    /// ```no_run
    /// let dev = cudrv::Device::get(0)?;
    /// assert_eq!(dev.ordinal(), 0);
    /// assert!(cudrv::Device::get(1000).is_err());
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn get(ordinal: usize) -> Result<Device> {
        let count = Device::count()?;
        if ordinal >= count {
            bail_invalid!("device {ordinal} requested but the driver sees {count} device(s)");
        }
        let mut raw = 0;
        // SAFETY: writes one CUdevice through a valid pointer; ordinal < count fits in an int.
        unsafe { cu!(cuDeviceGet(&mut raw, ordinal as i32))? };
        Ok(Device { ordinal, raw })
    }

    /// The ordinal this device was opened with.
    ///
    /// ```no_run
    /// let ctx = cudrv::Context::new(0)?;
    /// assert_eq!(ctx.device().ordinal(), 0);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn ordinal(&self) -> usize {
        self.ordinal
    }

    /// The driver's handle.
    ///
    /// ```no_run
    /// let raw: cudrv::sys::CUdevice = cudrv::Device::get(0)?.raw(); // for unwrapped driver calls
    /// # let _ = raw;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn raw(&self) -> sys::CUdevice {
        self.raw
    }

    /// The product name, e.g. `NVIDIA H100 80GB HBM3`.
    ///
    /// ```no_run
    /// println!("{}", cudrv::Device::get(0)?.name()?); // e.g. "NVIDIA H100 80GB HBM3"
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn name(&self) -> Result<String> {
        let mut buf = [0 as c_char; 256];
        // SAFETY: the driver writes at most `len` bytes, NUL-terminated, into `buf`.
        unsafe { cu!(cuDeviceGetName(buf.as_mut_ptr(), buf.len() as i32, self.raw))? };
        // SAFETY: the driver NUL-terminated the name within the buffer.
        Ok(unsafe { CStr::from_ptr(buf.as_ptr()) }.to_string_lossy().into_owned())
    }

    /// The device's UUID as 16 bytes.
    ///
    /// ```no_run
    /// let dev = cudrv::Device::get(0)?;
    /// let bytes = dev.uuid()?;
    /// assert!(dev.uuid_string()?.contains(&format!("{:02x}", bytes[0])));
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn uuid(&self) -> Result<[u8; 16]> {
        let mut uuid = sys::CUuuid::default();
        // SAFETY: writes one CUuuid through a valid pointer. The _v2 entry point is preferred;
        // drivers without it still have the original.
        match unsafe { cu!(cuDeviceGetUuid_v2(&mut uuid, self.raw)) } {
            Ok(()) => {}
            Err(crate::Error::MissingSymbol { .. }) => {
                // SAFETY: as above.
                unsafe { cu!(cuDeviceGetUuid(&mut uuid, self.raw))? }
            }
            Err(e) => return Err(e),
        }
        Ok(uuid.bytes.map(|b| b as u8))
    }

    /// The UUID in the `GPU-xxxxxxxx-xxxx-...` form that nvidia-smi prints.
    ///
    /// ```no_run
    /// // The form nvidia-smi and CUDA_VISIBLE_DEVICES use: "GPU-xxxxxxxx-xxxx-...".
    /// println!("{}", cudrv::Device::get(0)?.uuid_string()?);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn uuid_string(&self) -> Result<String> {
        let b = self.uuid()?;
        let hex = |r: std::ops::Range<usize>| b[r].iter().map(|x| format!("{x:02x}")).collect::<String>();
        Ok(format!(
            "GPU-{}-{}-{}-{}-{}",
            hex(0..4),
            hex(4..6),
            hex(6..8),
            hex(8..10),
            hex(10..16)
        ))
    }

    /// One device attribute.
    ///
    /// ```no_run
    /// use cudrv::sys::CUdevice_attribute as A;
    /// let sms = cudrv::Device::get(0)?.attribute(A::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn attribute(&self, attribute: Attr) -> Result<i32> {
        let mut value = 0;
        // SAFETY: writes one int through a valid pointer; an unknown attribute is a driver error.
        unsafe { cu!(cuDeviceGetAttribute(&mut value, attribute, self.raw))? };
        Ok(value)
    }

    /// The compute capability as (major, minor), e.g. (9, 0) for Hopper.
    ///
    /// ```no_run
    /// let (major, minor) = cudrv::Device::get(0)?.compute_capability()?;
    /// let hopper = (major, minor) >= (9, 0);
    /// # let _ = hopper;
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn compute_capability(&self) -> Result<(u32, u32)> {
        Ok((
            self.attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MAJOR)? as u32,
            self.attribute(Attr::CU_DEVICE_ATTRIBUTE_COMPUTE_CAPABILITY_MINOR)? as u32,
        ))
    }

    /// Total device memory in bytes.
    ///
    /// ```no_run
    /// println!("{} GiB", cudrv::Device::get(0)?.total_memory()? >> 30);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn total_memory(&self) -> Result<usize> {
        let mut bytes = 0;
        // SAFETY: writes one size_t through a valid pointer.
        unsafe { cu!(cuDeviceTotalMem_v2(&mut bytes, self.raw))? };
        Ok(bytes)
    }

    /// The limits launches are checked against.
    ///
    /// ```no_run
    /// let l = cudrv::Device::get(0)?.limits()?;
    /// assert!(l.max_threads_per_block >= 1024);
    /// # Ok::<(), cudrv::Error>(())
    /// ```
    pub fn limits(&self) -> Result<DeviceLimits> {
        let a = |attr| self.attribute(attr).map(|v| v.max(0) as u32);
        Ok(DeviceLimits {
            max_threads_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_THREADS_PER_BLOCK)?,
            max_block_dim: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_X)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Y)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_BLOCK_DIM_Z)?,
            ],
            max_grid_dim: [
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_X)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Y)?,
                a(Attr::CU_DEVICE_ATTRIBUTE_MAX_GRID_DIM_Z)?,
            ],
            max_shared_per_block: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK)?,
            max_shared_per_block_optin: a(Attr::CU_DEVICE_ATTRIBUTE_MAX_SHARED_MEMORY_PER_BLOCK_OPTIN)?,
            multiprocessor_count: a(Attr::CU_DEVICE_ATTRIBUTE_MULTIPROCESSOR_COUNT)?,
            warp_size: a(Attr::CU_DEVICE_ATTRIBUTE_WARP_SIZE)?,
            // Only a tuning input (GEMV's kernel choice): a driver that does not report it gives 0.
            l2_cache_bytes: a(Attr::CU_DEVICE_ATTRIBUTE_L2_CACHE_SIZE).unwrap_or(0),
            // Tuning inputs too (GEMM's choices by memory bandwidth).
            memory_clock_khz: a(Attr::CU_DEVICE_ATTRIBUTE_MEMORY_CLOCK_RATE).unwrap_or(0),
            memory_bus_bits: a(Attr::CU_DEVICE_ATTRIBUTE_GLOBAL_MEMORY_BUS_WIDTH).unwrap_or(0),
            single_to_double_ratio: a(Attr::CU_DEVICE_ATTRIBUTE_SINGLE_TO_DOUBLE_PRECISION_PERF_RATIO).unwrap_or(0),
        })
    }
}

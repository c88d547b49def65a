//! Process-wide figures: CPU time (`getrusage`) and peak resident set (`VmHWM`).

use crate::BoxError;

/// User plus system CPU time of the whole process so far, in seconds.
pub fn cpu_seconds() -> Result<f64, BoxError> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::zeroed();
    // SAFETY: `getrusage` only writes into the buffer we pass, which is large enough.
    let rc = unsafe { libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) };
    if rc != 0 {
        return Err(format!("getrusage failed: {}", std::io::Error::last_os_error()).into());
    }
    // SAFETY: `getrusage` returned 0, so it filled the struct.
    let usage = unsafe { usage.assume_init() };
    let secs = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 / 1e6;
    Ok(secs(usage.ru_utime) + secs(usage.ru_stime))
}

/// The peak resident set size (`VmHWM` in `/proc/self/status`), in MiB.
pub fn peak_rss_mib() -> Result<f64, BoxError> {
    let status = std::fs::read_to_string("/proc/self/status")
        .map_err(|e| format!("cannot read /proc/self/status (Linux only): {e}"))?;
    let line = status
        .lines()
        .find(|l| l.starts_with("VmHWM:"))
        .ok_or("no VmHWM line in /proc/self/status")?;
    let kib: f64 = line
        .trim_start_matches("VmHWM:")
        .trim()
        .trim_end_matches("kB")
        .trim()
        .parse()
        .map_err(|e| format!("cannot read {line:?}: {e}"))?;
    Ok(kib / 1024.0)
}

//! Memory of a process, from `/proc/<pid>/status` (Linux).

use std::io;

/// Resident memory of a process.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Memory {
    /// `VmRSS`: resident now, in KiB.
    pub rss_kib: u64,
    /// `VmHWM`: the peak resident size so far, in KiB.
    pub hwm_kib: u64,
}

impl Memory {
    /// `VmRSS` in MiB.
    pub fn rss_mib(&self) -> f64 {
        self.rss_kib as f64 / 1024.0
    }

    /// `VmHWM` in MiB.
    pub fn hwm_mib(&self) -> f64 {
        self.hwm_kib as f64 / 1024.0
    }
}

/// Reads `VmRSS` and `VmHWM` of `pid`.
///
/// # Errors
/// The process is gone, or the file lacks the fields (not Linux).
pub fn memory(pid: u32) -> io::Result<Memory> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status"))?;
    let field = |name: &str| {
        status
            .lines()
            .find_map(|line| line.strip_prefix(name))
            .and_then(|rest| {
                rest.trim()
                    .trim_end_matches("kB")
                    .trim()
                    .parse::<u64>()
                    .ok()
            })
            .ok_or_else(|| io::Error::other(format!("no {name} in /proc/{pid}/status")))
    };
    Ok(Memory {
        rss_kib: field("VmRSS:")?,
        hwm_kib: field("VmHWM:")?,
    })
}

/// The bytes queued on every IPv4 TCP socket with `port` at either end, from `/proc/net/tcp`:
/// `(tx_queue, rx_queue)` per socket. All zeros means every byte sent has been read.
///
/// # Errors
/// The file is not readable (not Linux).
pub fn tcp_queues(port: u16) -> io::Result<Vec<(u64, u64)>> {
    let table = std::fs::read_to_string("/proc/net/tcp")?;
    let port_of = |address: &str| {
        address
            .rsplit(':')
            .next()
            .and_then(|p| u16::from_str_radix(p, 16).ok())
    };
    Ok(table
        .lines()
        .skip(1)
        .filter_map(|line| {
            let mut fields = line.split_whitespace();
            let local = port_of(fields.nth(1)?)?;
            let remote = port_of(fields.next()?)?;
            let (tx, rx) = fields.nth(1)?.split_once(':')?;
            ((local == port || remote == port) && local != 0).then(|| {
                (
                    u64::from_str_radix(tx, 16).unwrap_or(u64::MAX),
                    u64::from_str_radix(rx, 16).unwrap_or(u64::MAX),
                )
            })
        })
        .collect())
}

/// How many IPv4 TCP connections to `port` on this machine are established, counted at their
/// connecting end (`/proc/net/tcp`, state `01`): e.g. a proxy's streams held open to one
/// upstream instance.
///
/// # Errors
/// The file is not readable (not Linux).
pub fn established_to(port: u16) -> io::Result<usize> {
    let table = std::fs::read_to_string("/proc/net/tcp")?;
    Ok(table
        .lines()
        .skip(1)
        .filter(|line| {
            let mut fields = line.split_whitespace();
            let remote = fields.nth(2).and_then(|address| address.rsplit(':').next());
            let state = fields.next();
            remote.and_then(|p| u16::from_str_radix(p, 16).ok()) == Some(port)
                && state == Some("01")
        })
        .count())
}

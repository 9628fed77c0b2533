//! CPU priority of the engine's background threads.
//!
//! Linux keeps a nice value per thread. A background thread whose work can wait a few
//! milliseconds lowers its own, so that under load the scheduler runs request threads first
//! and the background work in the gaps; on an idle machine it runs as soon as it is ready, as
//! before. Elsewhere, and if the system refuses, the thread keeps the normal priority.

/// The daily backup: a copy and an `integrity_check` of the whole file, which may take minutes
/// and can wait for as long as requests keep the cores busy.
pub const BACKUP: i32 = 19;

/// The audit writer (`store/audit.rs`). It sleeps for a quarter second, then writes everything
/// that arrived meanwhile: thousands of rows, tens of milliseconds of one core in a burst. At
/// the normal priority that burst took one of two cores from the requests in flight. At nice 5
/// (a third of a request thread's weight, and more than the share its work needs: 13 of 86 µs
/// per lookup) it keeps up under saturating loads while requests preempt it; measured in
/// `bench/README.md`. Its queue is bounded, so a writer that fell behind slows requests down
/// instead of growing.
pub const AUDIT_WRITER: i32 = 5;

/// Gives the calling thread the nice value `nice` (0 normal, 19 lowest), unless it already
/// runs at that priority or lower (a service started under `nice` keeps its own).
pub fn lower_current_thread(nice: i32) {
    #[cfg(target_os = "linux")]
    if current_nice() < nice {
        // SAFETY: setpriority only reads its integer arguments; `who` 0 names the calling thread.
        unsafe {
            libc::setpriority(libc::PRIO_PROCESS, 0, nice);
        }
    }
    #[cfg(not(target_os = "linux"))]
    let _ = nice;
}

/// The calling thread's nice value.
#[cfg(target_os = "linux")]
pub fn current_nice() -> i32 {
    // SAFETY: getpriority only reads its integer arguments; `who` 0 names the calling thread,
    // which always exists, so the answer is the nice value and never an error.
    unsafe { libc::getpriority(libc::PRIO_PROCESS, 0) }
}

/// The nice value of this process's thread named `name`, from `/proc` (tests).
#[cfg(all(test, target_os = "linux"))]
pub fn nice_of_thread(name: &str) -> Option<i32> {
    std::fs::read_dir("/proc/self/task").ok()?.find_map(|task| {
        let dir = task.ok()?.path();
        let comm = std::fs::read_to_string(dir.join("comm")).ok()?;
        if comm.trim_end() != name {
            return None;
        }
        // Fields after the command's closing parenthesis; `nice` is the 19th of the line.
        let stat = std::fs::read_to_string(dir.join("stat")).ok()?;
        let after_comm = &stat[stat.rfind(')')? + 2..];
        after_comm.split(' ').nth(16)?.parse().ok()
    })
}

#[cfg(all(test, target_os = "linux"))]
mod tests {
    use super::*;
    use std::sync::mpsc;

    /// A thread named `name` that sets `nice` (if any) and waits until `stop` is dropped.
    fn probe(name: &str, nice: Option<i32>) -> (std::thread::JoinHandle<()>, mpsc::Sender<()>) {
        let (ready, wait) = mpsc::channel();
        let (stop, stopped) = mpsc::channel::<()>();
        let thread = std::thread::Builder::new()
            .name(name.into())
            .spawn(move || {
                if let Some(nice) = nice {
                    lower_current_thread(nice);
                }
                ready.send(()).unwrap();
                let _ = stopped.recv();
            })
            .unwrap();
        wait.recv().unwrap();
        (thread, stop)
    }

    #[test]
    fn a_thread_lowers_its_own_priority_and_no_other() {
        let (lowered, stop_lowered) = probe("nice-lowered", Some(7));
        let (normal, stop_normal) = probe("nice-normal", None);
        // Threads start with their creator's value: the test's, normally 0.
        let base = current_nice();
        assert_eq!(nice_of_thread("nice-lowered"), Some(base.max(7)));
        assert_eq!(nice_of_thread("nice-normal"), Some(base));
        drop((stop_lowered, stop_normal));
        lowered.join().unwrap();
        normal.join().unwrap();
    }
}

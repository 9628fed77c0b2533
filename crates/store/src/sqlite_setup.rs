//! SQLite's process-wide settings, made once before its first connection.
//!
//! - **Its heap is mimalloc's**, the one the Rust side uses. SQLite's default is the C
//!   library's `malloc`. A group commit runs each request in a savepoint, and SQLite copies
//!   every page the request changes into the savepoint's in-memory journal, in chunks of about
//!   1 KiB, each one allocated and freed again. Profiled under `POST /mandate`, those
//!   allocations were two thirds of the journal's cost and 9% of the server threads. glibc
//!   takes an arena lock for each one; mimalloc serves them from the thread's own heap.
//! - **No memory statistics** (`SQLITE_CONFIG_MEMSTATUS` off). With them, every allocation
//!   and free in every connection takes one process-wide mutex, shared by the writer, the
//!   readers and the audit writer. Nothing here reads the statistics
//!   (`sqlite3_memory_used`, a soft heap limit).
//!
//! Neither changes what SQLite stores or answers. Both settings can only be made before
//! SQLite initialises, that is, before the process opens its first connection. The store's
//! connections are all opened through [`configure`]. If something opened one earlier (a
//! library, a test), SQLite refuses the settings and keeps its defaults, which work the same,
//! only slower.

use std::ffi::{c_int, c_void};
use std::sync::Once;

use rusqlite::ffi;

/// Applies the settings once per process; later calls do nothing.
pub fn configure() {
    static ONCE: Once = Once::new();
    ONCE.call_once(|| {
        let methods = ffi::sqlite3_mem_methods {
            xMalloc: Some(x_malloc),
            xFree: Some(x_free),
            xRealloc: Some(x_realloc),
            xSize: Some(x_size),
            xRoundup: Some(x_roundup),
            xInit: Some(x_init),
            xShutdown: Some(x_shutdown),
            pAppData: std::ptr::null_mut(),
        };
        // SAFETY: `sqlite3_config` copies the methods before returning; they stay valid for
        // the whole process (plain functions). Both calls only fail, harmlessly, once SQLite
        // has initialised.
        let (malloc, memstatus) = unsafe {
            (
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MALLOC, &methods as *const _),
                ffi::sqlite3_config(ffi::SQLITE_CONFIG_MEMSTATUS, 0 as c_int),
            )
        };
        if malloc != ffi::SQLITE_OK || memstatus != ffi::SQLITE_OK {
            tracing::debug!(
                malloc,
                memstatus,
                "SQLite was initialised before the store: its default heap is kept"
            );
        }
    });
}

// SQLite asks for sizes as `int`, never negative, and handles a null answer as out of memory.

unsafe extern "C" fn x_malloc(size: c_int) -> *mut c_void {
    // SAFETY: any size is valid for `mi_malloc`.
    unsafe { libmimalloc_sys::mi_malloc(size.max(0) as usize) }
}

unsafe extern "C" fn x_free(block: *mut c_void) {
    // SAFETY: SQLite frees only what `x_malloc` or `x_realloc` returned.
    unsafe { libmimalloc_sys::mi_free(block) }
}

unsafe extern "C" fn x_realloc(block: *mut c_void, size: c_int) -> *mut c_void {
    // SAFETY: as for `x_free`; SQLite keeps the old block when null is returned.
    unsafe { libmimalloc_sys::mi_realloc(block, size.max(0) as usize) }
}

unsafe extern "C" fn x_size(block: *mut c_void) -> c_int {
    // SAFETY: as for `x_free`. SQLite's allocations stay far below `int`'s range (its own
    // limit is 2^31 - 256 bytes), so the usable size fits.
    unsafe { libmimalloc_sys::mi_usable_size(block) }.min(c_int::MAX as usize) as c_int
}

unsafe extern "C" fn x_roundup(size: c_int) -> c_int {
    // SAFETY: a pure function of the size.
    let good = unsafe { libmimalloc_sys::mi_good_size(size.max(0) as usize) };
    good.min(c_int::MAX as usize) as c_int
}

unsafe extern "C" fn x_init(_: *mut c_void) -> c_int {
    ffi::SQLITE_OK
}

unsafe extern "C" fn x_shutdown(_: *mut c_void) {}

#[cfg(test)]
mod tests {
    use rusqlite::Connection;

    /// `.cargo/config.toml` builds SQLite without the shared page-cache LRU and without memory
    /// statistics; a build that lost those flags would be slower without failing otherwise.
    #[test]
    fn sqlite_is_built_with_the_projects_flags() {
        let conn = Connection::open_in_memory().unwrap();
        let options: Vec<String> = conn
            .prepare("PRAGMA compile_options")
            .unwrap()
            .query_map([], |r| r.get(0))
            .unwrap()
            .collect::<Result<_, _>>()
            .unwrap();
        assert!(
            !options.iter().any(|o| o == "ENABLE_MEMORY_MANAGEMENT"),
            "{options:?}"
        );
        assert!(
            options.iter().any(|o| o == "DEFAULT_MEMSTATUS=0"),
            "{options:?}"
        );
    }
}

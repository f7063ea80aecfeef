import Dispatch

extension Database {
    /// Stops using the files at once, as if the process had died: no flush, no final sync. Tests use it with
    /// `MemoryFileSystem.simulateCrash()`.
    package func simulateProcessDeath() {
        // A merge under way stops and keeps nothing (its suspension would write a manifest).
        dying.store(true, ordering: .releasing)
        waitForBackgroundMerge()
        // A shared database's background flush holds no gate while it builds: it sees `dying` and keeps nothing.
        if shared != nil, DispatchQueue.getSpecific(key: Self.maintenanceKey) != instance { maintenance.sync {} }
        writerGate.wait()
        defer { writerGate.signal() }
        let wasClosed = published.withLock { p -> Bool in
            defer { p.closed = true }
            return p.closed
        }
        if wasClosed { return }
        onMaintenance {}
        abandonFiles()
    }
}

extension Database {
    /// Waits until the background flushes and compactions queued so far have run.
    package func waitForMaintenance() {
        // Not `onMaintenance`, which a shared database runs inline: its queued jobs are waited for too.
        if DispatchQueue.getSpecific(key: Self.maintenanceKey) == instance { return }
        // A flush queues its merges; a merge installs on the maintenance queue.
        maintenance.sync {}
        waitForBackgroundMerge()
        maintenance.sync {}
        waitForBackgroundMerge()
    }
}


extension Database {
    /// Runs the merges the size-tiered policy asks for now, resuming suspended ones first, as the background
    /// maintenance does (tests that run without it, so that every sync happens in a known order). A merge that
    /// stops part way (`mergeEntriesBeforeSuspending`) is suspended, and this returns.
    package func mergeWhereNeededNow() throws {
        try merging.sync {
            do {
                try mergeInBackground(stepsAside: false)
            } catch let error as StorageError where error.code == .closed {
                // Suspended.
            }
        }
    }
}

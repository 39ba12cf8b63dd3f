import CouchbaseLite
import Foundation

extension CBLReplication {
    /// Starts a one-shot replication and waits for it to stop (what `_replicate` without
    /// `continuous` does, and each leg of a relay). Returns its error, except a 403 on a single
    /// document: CouchDB reports that per document, not as a failed replication.
    func runToCompletion() -> Error? {
        let done = DispatchSemaphore(value: 0)
        let token = addChangeListener { r in if !r.running { done.signal() } }
        start()
        // The timeout re-checks `running` in case the stop happened before the listener was added.
        while running { _ = done.wait(timeout: .now() + 1) }
        removeChangeListener(token)
        if let error = lastError as? CBLError, error.code == 403 { return nil }
        return lastError
    }
}

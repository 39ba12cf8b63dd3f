import Foundation
import Logging
import Synchronization

/// 1.x log tags (`CBLManager.enableLogging("Sync")`) mapped onto swift-log loggers labelled
/// `CouchbaseLite.<Tag>`. Tags are free-form; unknown ones are accepted (apps make typos).
enum CBLLog {
    private static let enabledTags = Mutex<Set<String>>([])

    static func enable(_ tag: String) {
        enabledTags.withLock { _ = $0.insert(tag.lowercased()) }
    }

    static func isEnabled(_ tag: String) -> Bool {
        enabledTags.withLock { $0.contains(tag.lowercased()) || $0.contains("all") }
    }

    static func logger(_ tag: String) -> Logger {
        var logger = Logger(label: "CouchbaseLite.\(tag)")
        logger.logLevel = isEnabled(tag) ? .debug : .warning
        return logger
    }

    static func debug(_ tag: String, _ message: @autoclosure () -> String) {
        guard isEnabled(tag) else { return }
        logger(tag).debug("\(message())")
    }

    static func warning(_ tag: String, _ message: @autoclosure () -> String) {
        logger(tag).warning("\(message())")
    }
}

import CouchbaseLite
import JSONCore

/// Sequences as the listener writes them. CouchDB 2+ sends `update_seq`, `last_seq` and each
/// change's `seq` as opaque JSON strings (`"12-g1AAAA…"`), and clients written for it (typed
/// clients, CouchDB's own test helpers, which read the number before the `-`) expect strings;
/// 1.x's LiteServ sent numbers. The listener sends `"N-cbl"` — `N` the database's 1.x sequence,
/// the rest marking the string form — unless ``CBLListener/integerSequences`` (`cbl serve
/// --integer-sequences`) asks for 1.x's numbers. Either way it reads back numbers, `"N"` and
/// `"N-anything"` (`since`, `Last-Event-ID`, replication checkpoints); the file format does not change.
extension ListenerState {
    /// The suffix that marks a sequence written as a string.
    static let sequenceSuffix = "-cbl"

    /// A database sequence as the listener writes it.
    func sequence(_ number: Int64) -> RemoteSequence {
        integerSequences ? RemoteSequence(number) : RemoteSequence(.string(String(number) + Self.sequenceSuffix))
    }

    /// A database sequence as the JSON value the listener writes.
    func sequenceJSON(_ number: Int64) -> JSONValue { sequence(number).json }

    /// A database sequence for a Foundation-typed answer (`Int` or `String`).
    func sequenceValue(_ number: Int64) -> Any {
        integerSequences ? Int(number) : String(number) + Self.sequenceSuffix
    }

    /// A database sequence as JSON text (an EventSource event's `id`, a feed's `last_seq`).
    func sequenceText(_ number: Int64) -> String {
        integerSequences ? String(number) : "\"\(number)\(Self.sequenceSuffix)\""
    }
}

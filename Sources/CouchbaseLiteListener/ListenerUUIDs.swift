import CouchbaseLite
import Foundation

/// UUIDs as CouchDB's `couch_uuids` makes them, by `[uuids] algorithm`: for `GET /_uuids` and
/// the IDs of documents POSTed without one.
/// - `random`: 32 hex digits of 16 random bytes.
/// - `sequential`: a random 26-digit prefix and a 6-digit counter that grows by a random step
///   (1…0xFFE); a new prefix when the counter would pass 0xFFF000. Sorted, so B-trees stay compact.
/// - `utc_random`: 14 hex digits of microseconds since 1970, then 18 random ones.
/// - `utc_id`: the 14 time digits, then `[uuids] utc_id_suffix`.
/// Time-based UUIDs never go backwards or repeat: a microsecond already used is moved past.
// @unchecked because `prefix`, `counter` and `lastMicros` are only touched under `lock`.
final class ListenerUUIDs: @unchecked Sendable {
    private let lock = NSLock()
    private var prefix: String?
    private var counter = 0
    private var lastMicros: UInt64 = 0

    /// `count` new UUIDs by `algorithm`.
    func make(_ count: Int, algorithm: ListenerConfiguration.Settings.UUIDAlgorithm, utcIDSuffix: String) -> [String] {
        (0..<count).map { _ in make(algorithm, utcIDSuffix: utcIDSuffix) }
    }

    func make(_ algorithm: ListenerConfiguration.Settings.UUIDAlgorithm, utcIDSuffix: String) -> String {
        switch algorithm {
        case .random:
            return Self.randomHex(16)
        case .sequential:
            return lock.withLock {
                counter += Int.random(in: 1...0xFFE)
                if prefix == nil || counter >= 0xFFF000 {
                    prefix = String(Self.randomHex(13))
                    counter = Int.random(in: 1...0xFFE)
                }
                return prefix! + Self.hex(UInt64(counter), digits: 6)
            }
        case .utcRandom:
            return Self.hex(nextMicros(), digits: 14) + String(Self.randomHex(9).prefix(18))
        case .utcID:
            return Self.hex(nextMicros(), digits: 14) + utcIDSuffix
        }
    }

    private func nextMicros() -> UInt64 {
        let now = UInt64(max(Date().timeIntervalSince1970, 0) * 1_000_000)
        return lock.withLock {
            lastMicros = max(now, lastMicros + 1)
            return lastMicros
        }
    }

    static func randomHex(_ bytes: Int) -> String {
        var generator = SystemRandomNumberGenerator()
        return CouchPasswords.hex((0..<bytes).map { _ in UInt8.random(in: 0...255, using: &generator) })
    }

    static func hex(_ value: UInt64, digits: Int) -> String {
        let text = String(value, radix: 16)
        return text.count >= digits ? String(text.suffix(digits)) : String(repeating: "0", count: digits - text.count) + text
    }
}

extension ListenerState {
    /// The ID of a document saved without one: by the configuration's `[uuids] algorithm`
    /// when set, else as 1.x's LiteServ made it.
    func newUUID() -> String {
        let settings = configuration.settings
        guard let algorithm = settings.uuidAlgorithm else { return CBLDatabase.syncGenerateDocumentID() }
        return uuids.make(algorithm, utcIDSuffix: settings.utcIDSuffix)
    }
}

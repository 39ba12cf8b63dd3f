import Foundation

/// 1.x `CBLListener` members kept for source compatibility with apps written against 1.x.
extension CBLListener {
    /// True when passwords are set (every request must authenticate).
    public var requiresAuth: Bool { passwords != nil }

    /// The password of a user, if passwords are set.
    public func passwordForUser(_ user: String) -> String? { passwords?[user] }

    /// Swift 2/3 spelling of ``url``.
    public var URL: Foundation.URL? { url }

    /// Swift 2/3 spelling of ``setAnonymousSSLIdentity(withLabel:)``.
    public func setAnonymousSSLIdentityWithLabel(_ label: String) throws {
        try setAnonymousSSLIdentity(withLabel: label)
    }

    /// Swift 2/3 spelling of ``sslIdentityDigest``.
    public var SSLIdentityDigest: Data? { sslIdentityDigest }

    /// Bonjour (mDNS) advertising is not available on Linux: the name and type are remembered
    /// (`bonjourName`, `bonjourType`) but nothing is advertised.
    public func setBonjourName(_ name: String?, type: String?) {
        state.withLock {
            $0.bonjourName = name
            $0.bonjourType = type
        }
    }

    /// The name given to ``setBonjourName(_:type:)`` (never advertised on Linux).
    public var bonjourName: String? { state.withLock { $0.bonjourName } }

    /// The service type given to ``setBonjourName(_:type:)``.
    public var bonjourType: String? { state.withLock { $0.bonjourType } }

    /// The Bonjour TXT record (kept, never advertised on Linux).
    public var txtRecordDictionary: [String: String]? {
        get { state.withLock { $0.txtRecord } }
        set { state.withLock { $0.txtRecord = newValue } }
    }

    /// Swift 2/3 spelling of ``txtRecordDictionary``.
    public var TXTRecordDictionary: [String: String]? {
        get { txtRecordDictionary }
        set { txtRecordDictionary = newValue }
    }
}

import Foundation

extension CBLReplication {
    /// Forgets the stored authentication for this replication's remote (1.x
    /// `clearAuthenticationStores:`): every cookie (the app's and the session cookies the remote
    /// set at login), so the next request is anonymous unless an authenticator logs in again.
    /// Linux has no keychain or `NSURLCredentialStorage`: credentials live only in the
    /// authenticator or the URL, which stay as the app set them (1.x removed only stored copies).
    public func clearAuthenticationStores() throws {
        cookieJar.withLock { $0.removeAll() }
    }
}

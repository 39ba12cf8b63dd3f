import Foundation

/// Whether a Foundation or POSIX error is ENOSPC/EDQUOT: FileHandle reports them as
/// `NSPOSIXErrorDomain` errors, `Data.write` as `CocoaError.fileWriteOutOfSpace`. The file-side
/// twin of ``SQLiteError/isDiskFull``, shared by both blob stores.
package func isOutOfSpaceError(_ error: Error) -> Bool {
    let ns = error as NSError
    if ns.domain == NSPOSIXErrorDomain, ns.code == Int(ENOSPC) || ns.code == Int(EDQUOT) { return true }
    if ns.domain == NSCocoaErrorDomain, ns.code == CocoaError.fileWriteOutOfSpace.rawValue { return true }
    if let underlying = ns.userInfo[NSUnderlyingErrorKey] as? Error { return isOutOfSpaceError(underlying) }
    return false
}

import Foundation

/// The IPv4 loopback socket chores of the tests' own servers and port probes (tests only ever
/// talk to 127.0.0.1).
public enum LoopbackSocket {
    /// Binds `fd` to 127.0.0.1:`port` (0: a port the system picks); true on success.
    public static func bind(_ fd: Int32, port: UInt16 = 0) -> Bool {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = port.bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) {
                Foundation.bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size))
            }
        } == 0
    }

    /// The port `fd` is bound to.
    public static func boundPort(_ fd: Int32) -> UInt16 {
        var out = sockaddr_in()
        var len = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &out) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &len) }
        }
        return UInt16(bigEndian: out.sin_port)
    }

    /// Lets a listening socket take a port still in TIME_WAIT (as servers do).
    public static func reuseAddress(_ fd: Int32) {
        var yes: Int32 = 1
        _ = setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &yes, socklen_t(MemoryLayout<Int32>.size))
    }
}

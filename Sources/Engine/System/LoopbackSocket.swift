// Guards: TCP on the loopback interface for this package's tests (the sync tests' fault-injecting proxy and
// their free ports), not the library: each function is one or two C calls with the platform's spelling, and
// every buffer passed to the C library is Swift's own, with its own count.

#if canImport(Glibc)
import Glibc
#elseif canImport(Musl)
import Musl
#elseif canImport(Darwin)
import Darwin
#endif

/// Blocking TCP sockets on 127.0.0.1.
package enum LoopbackSocket {
    #if canImport(Darwin)
    private static let stream = SOCK_STREAM
    private static let noSignal: Int32 = 0
    #else
    private static let stream = Int32(SOCK_STREAM.rawValue)
    private static let noSignal = Int32(MSG_NOSIGNAL)
    #endif

    private static func address(port: Int) -> sockaddr_in {
        var addr = sockaddr_in()
        addr.sin_family = sa_family_t(AF_INET)
        addr.sin_port = UInt16(port).bigEndian
        addr.sin_addr.s_addr = inet_addr("127.0.0.1")
        return addr
    }

    /// A listening socket on `port` (0: any free one) and the port it got.
    package static func listen(port: Int = 0) throws -> (socket: Int32, port: Int) {
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { throw SystemProcessError("socket: \(String(cString: strerror(errno)))") }
        var one: Int32 = 1
        setsockopt(fd, SOL_SOCKET, SO_REUSEADDR, &one, socklen_t(MemoryLayout<Int32>.size))
        var addr = address(port: port)
        let bound = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { bind(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard bound == 0, Glue.listen(fd) == 0 else {
            let message = String(cString: strerror(errno))
            _ = Glue.close(fd)
            throw SystemProcessError("bind or listen on 127.0.0.1:\(port): \(message)")
        }
        var length = socklen_t(MemoryLayout<sockaddr_in>.size)
        _ = withUnsafeMutablePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { getsockname(fd, $0, &length) }
        }
        return (fd, Int(UInt16(bigEndian: addr.sin_port)))
    }

    /// A port free at the moment of asking.
    package static func freePort() throws -> Int {
        let (fd, port) = try listen()
        close(fd)
        return port
    }

    /// The next connection of a listening socket (nil once it is closed).
    package static func accept(_ fd: Int32) -> Int32? {
        let c = Glue.accept(fd)
        return c >= 0 ? c : nil
    }

    /// A connection to 127.0.0.1:`port`, or nil.
    package static func connect(port: Int) -> Int32? {
        let fd = socket(AF_INET, stream, 0)
        guard fd >= 0 else { return nil }
        var addr = address(port: port)
        let connected = withUnsafePointer(to: &addr) {
            $0.withMemoryRebound(to: sockaddr.self, capacity: 1) { Glue.connect(fd, $0, socklen_t(MemoryLayout<sockaddr_in>.size)) }
        }
        guard connected == 0 else {
            _ = Glue.close(fd)
            return nil
        }
        return fd
    }

    /// Reads what is there (waiting for something) and appends it to `buffer`; false at the end of the stream.
    package static func receive(_ fd: Int32, into buffer: inout [UInt8]) -> Bool {
        var chunk = [UInt8](repeating: 0, count: 65536)
        let n = chunk.withUnsafeMutableBytes { recv(fd, $0.baseAddress, $0.count, 0) }
        guard n > 0 else { return false }
        buffer += chunk[..<n]
        return true
    }

    /// Writes all of `bytes`; false when the connection is gone.
    package static func send(_ fd: Int32, _ bytes: [UInt8]) -> Bool {
        var sent = 0
        while sent < bytes.count {
            let n = bytes[sent...].withUnsafeBytes { Glue.send(fd, $0.baseAddress, $0.count, noSignal) }
            guard n > 0 else { return false }
            sent += n
        }
        return true
    }

    package static func close(_ fd: Int32) { _ = Glue.close(fd) }

    /// Ends a listening socket's `accept` and a connection's reads.
    package static func shutdown(_ fd: Int32) { _ = Glue.shutdown(fd, Int32(SHUT_RDWR)) }

    /// The C functions whose names this enum's own take.
    private enum Glue {
        static func listen(_ fd: Int32) -> Int32 { cListen(fd, 64) }
        static func accept(_ fd: Int32) -> Int32 { cAccept(fd, nil, nil) }
        static func connect(_ fd: Int32, _ a: UnsafePointer<sockaddr>, _ l: socklen_t) -> Int32 { cConnect(fd, a, l) }
        static func send(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { cSend(fd, p, n, f) }
        static func close(_ fd: Int32) -> Int32 { cClose(fd) }
        static func shutdown(_ fd: Int32, _ how: Int32) -> Int32 { cShutdown(fd, how) }
    }
}

private func cListen(_ fd: Int32, _ backlog: Int32) -> Int32 { listen(fd, backlog) }
private func cAccept(_ fd: Int32, _ a: UnsafeMutablePointer<sockaddr>?, _ l: UnsafeMutablePointer<socklen_t>?) -> Int32 { accept(fd, a, l) }
private func cConnect(_ fd: Int32, _ a: UnsafePointer<sockaddr>, _ l: socklen_t) -> Int32 { connect(fd, a, l) }
private func cSend(_ fd: Int32, _ p: UnsafeRawPointer?, _ n: Int, _ f: Int32) -> Int { send(fd, p, n, f) }
private func cClose(_ fd: Int32) -> Int32 { close(fd) }
private func cShutdown(_ fd: Int32, _ how: Int32) -> Int32 { shutdown(fd, how) }

import CZlib
import Foundation

/// gzip decoding for attachments stored with `"encoding":"gzip"` (spec 4.4), and encoding for tests/peers.
enum Gzip {
    /// Decompresses gzip (or zlib) data. Throws on malformed input.
    static func decompress(_ data: Data) throws -> Data {
        if data.isEmpty { return data }
        var stream = z_stream()
        // 15 + 32: detect gzip or zlib headers automatically.
        guard inflateInit2_(&stream, 15 + 32, ZLIB_VERSION, Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw CBLError.dbError("zlib init failed")
        }
        defer { inflateEnd(&stream) }
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        var input = [UInt8](data)
        let status: Int32 = input.withUnsafeMutableBufferPointer { inBuf in
            stream.next_in = inBuf.baseAddress
            stream.avail_in = uInt(inBuf.count)
            var rc: Int32 = Z_OK
            repeat {
                rc = chunk.withUnsafeMutableBufferPointer { outBuf in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(outBuf.count)
                    return inflate(&stream, Z_NO_FLUSH)
                }
                let produced = chunk.count - Int(stream.avail_out)
                output.append(contentsOf: chunk[0..<produced])
                if rc == Z_BUF_ERROR && stream.avail_in == 0 { break }
            } while rc == Z_OK
            return rc
        }
        guard status == Z_STREAM_END else { throw CBLError.badAttachment("gzip data is corrupt (zlib \(status))") }
        return output
    }

    /// Compresses data in gzip format: one ``GzipDeflater`` fed once and finished.
    static func compress(_ data: Data, level: Int32 = Z_DEFAULT_COMPRESSION) throws -> Data {
        let deflater = try GzipDeflater(level: level)
        var output = deflater.update(data)
        output.append(deflater.finish())
        return output
    }
}

/// gzip compression fed piece by piece (a streamed upload stored compressed as it arrives),
/// with the window and header ``Gzip/compress(_:level:)`` and CouchDB's stream use.
// @unchecked because one deflater is fed by one writer at a time, in order.
final class GzipDeflater: @unchecked Sendable {
    private var stream = z_stream()
    private var ended = false

    init(level: Int32) throws {
        guard deflateInit2_(&stream, level, Z_DEFLATED, 15 + 16, 8, Z_DEFAULT_STRATEGY, ZLIB_VERSION,
                            Int32(MemoryLayout<z_stream>.size)) == Z_OK else {
            throw CBLError.dbError("zlib init failed")
        }
    }

    deinit { if !ended { deflateEnd(&stream) } }

    /// Compresses `data`; returns what zlib has ready (possibly nothing yet).
    func update(_ data: Data) -> Data { run(data, flush: Z_NO_FLUSH) }

    /// The rest of the gzip stream (its trailer included).
    func finish() -> Data {
        let out = run(Data(), flush: Z_FINISH)
        deflateEnd(&stream)
        ended = true
        return out
    }

    private func run(_ data: Data, flush: Int32) -> Data {
        var input = [UInt8](data)
        var output = Data()
        var chunk = [UInt8](repeating: 0, count: 64 * 1024)
        input.withUnsafeMutableBufferPointer { inBuf in
            stream.next_in = inBuf.baseAddress
            stream.avail_in = uInt(inBuf.count)
            repeat {
                let rc = chunk.withUnsafeMutableBufferPointer { outBuf -> Int32 in
                    stream.next_out = outBuf.baseAddress
                    stream.avail_out = uInt(outBuf.count)
                    return deflate(&stream, flush)
                }
                output.append(contentsOf: chunk[0..<(chunk.count - Int(stream.avail_out))])
                if rc == Z_STREAM_END || rc == Z_STREAM_ERROR { break }
                if flush == Z_NO_FLUSH && stream.avail_in == 0 && stream.avail_out > 0 { break }
            } while true
        }
        return output
    }
}

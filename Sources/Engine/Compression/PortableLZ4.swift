// TEMPORARY compile stub, replaced before commit.
package enum PortableLZ4 {
    package static func compressBound(_ count: Int) -> Int { count + count / 255 + 16 }
    package static func compress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? { nil }
    package static func decompress(_ input: UnsafeRawBufferPointer, into output: UnsafeMutableRawBufferPointer) -> Int? { nil }
}

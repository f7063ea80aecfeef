import Foundation
@testable import Strata
import Testing
import TestSupport

/// Model discovery's record walk, shared by every platform (only where the sections are differs:
/// `MetadataSections`), and what it costs in a program with thousands of types.
@Suite struct ModelDiscoveryCostTests {
    /// `DiscoveryCostChild` has 3,162 types: plain root classes, subclasses of a plain class, structs, enums,
    /// generic classes and subclasses of a generic class, `@Observable` classes, 200 models and 40 embedded
    /// ones. Discovery finds exactly the models and calls nothing else. Its time is printed, not checked (no
    /// wall-clock thresholds in tests; the README gives the release figure).
    @Test func discoveryFindsTheModelsAmongThousandsOfTypes() throws {
        let (status, output) = try runChild("DiscoveryCostChild", [])
        #expect(status == 0)
        let words = output.split(whereSeparator: \.isWhitespace).map(String.init)
        func value(_ key: String) -> String? { words.firstIndex(of: key).map { words[$0 + 1] } }
        #expect(value("of").flatMap(Int.init) ?? 0 >= value("expected").flatMap(Int.init) ?? .max, "\(output)")
        #expect(value("models") == value("expected"), "\(output)")
        print("model discovery in a debug build: \(output)")
    }

    /// Records that are not of a non-generic class with a superclass are skipped without following anything
    /// further than their descriptor's flags: other kinds of type, generic classes, root classes (such as
    /// `@Observable` ones) and Objective-C references. (A synthetic section: its records point into itself.)
    @Test func recordsOfOtherTypesAreSkippedWithoutACall() {
        // Five records (20 bytes): four direct ones, then an Objective-C class reference (kind 3); then four
        // 24-byte descriptors. Only the records are the section.
        let recordBytes = 20
        var bytes = [UInt8](repeating: 0, count: recordBytes + 4 * 24)
        func put32(_ value: UInt32, at offset: Int) {
            for i in 0..<4 { bytes[offset + i] = UInt8(truncatingIfNeeded: value >> (8 * UInt32(i))) }
        }
        let descriptorFlags: [UInt32] = [
            17,  // a struct
            16 | 0x80,  // a generic class
            16,  // a class with no superclass (offset 20 stays 0)
            18,  // an enum
        ]
        for (i, flags) in descriptorFlags.enumerated() {
            let descriptor = recordBytes + 24 * i
            put32(UInt32(descriptor - 4 * i), at: 4 * i)  // direct record: offset relative to the record
            put32(flags, at: descriptor)
            // An accessor offset that would jump into nowhere if it were ever called.
            put32(0x7FFF_FFF0, at: descriptor + 12)
        }
        put32(3, at: 16)
        var found: [Any.Type] = []
        bytes.withUnsafeBytes { all in
            ModelDiscovery.forEachClass(inTypeRecords: UnsafeRawBufferPointer(rebasing: all[0..<recordBytes])) { found.append($0) }
        }
        #expect(found.isEmpty)
    }

    /// The walk over the real sections of this test binary finds this module's models.
    @Test func theSectionsOfThisProgramHoldItsModels() {
        let names = Set(ModelDiscovery.modelClasses.map { String(reflecting: $0) })
        #expect(names.contains(String(reflecting: ChainNode.self)))
        #expect(names.contains(String(reflecting: JSONTask.self)))
        #expect(!names.contains(String(reflecting: Object.self)))
    }
}

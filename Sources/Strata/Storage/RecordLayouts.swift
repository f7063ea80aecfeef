import Engine
import Foundation

/// The layouts records of one partition may have been written in, by schema version: the type at the current
/// version, at each pending online migration's version and at every version of the schema's history.
package struct RecordLayouts: Sendable {
    /// By version; a schema's history is short, and a list is searched faster than a dictionary is hashed.
    private var byVersion: [(version: UInt64, layout: RecordLayout)] = []
    /// Asked for a version this set lacks: a record written after the set was made, by an instance of the
    /// file at a newer schema version.
    var fallback: (@Sendable (UInt64) -> RecordLayout?)?

    init() {}

    package init(_ layouts: [UInt64: RecordLayout]) {
        for (v, l) in layouts { self[v] = l }
    }

    private subscript(version: UInt64) -> RecordLayout? {
        get { byVersion.first { $0.version == version }?.layout }
        set {
            byVersion.removeAll { $0.version == version }
            if let newValue { byVersion.append((version, newValue)) }
        }
    }

    /// The layouts of `partition` in `schemas` (later ones win where they name the same version).
    init(partition: UInt32, in schemas: StoredSchema?...) {
        for case let schema? in schemas {
            for v in schema.history ?? [] {
                if let t = v.types.first(where: { $0.partition == partition }) { self[v.schemaVersion] = RecordLayout(t.properties) }
            }
            for m in schema.pending ?? [] where m.oldType.partition == partition {
                self[m.fromVersion] = RecordLayout(m.oldType.properties)
            }
            if let t = schema.types.first(where: { $0.partition == partition }) { self[schema.schemaVersion] = RecordLayout(t.properties) }
        }
    }

    func layout(_ version: UInt64) -> RecordLayout? {
        for entry in byVersion where entry.version == version { return entry.layout }
        return fallback?(version)
    }

    /// The layout of a format-2 record of `version`, or a typed error naming what is missing.
    func required(_ version: UInt64) throws -> RecordLayout {
        guard let l = layout(version) else {
            throw StorageError(.corrupted, "record of schema version \(version) is in format 2, but the stored schema has no layout for that version")
        }
        return l
    }
}

/// The values of one record by property index, as the encoder reads them (nil writes as nil): the values of
/// a write (`[StoredValue]`) or an unmanaged object's setter values (`[StoredValue?]`).
protocol RecordValues {
    subscript(_ i: Int) -> StoredValue? { get }
}

struct StoredValues: RecordValues {
    let values: [StoredValue]
    @inline(__always) subscript(_ i: Int) -> StoredValue? { values[i] }
}

struct SetterValues: RecordValues {
    let values: [StoredValue?]
    @inline(__always) subscript(_ i: Int) -> StoredValue? { values[i] }
}

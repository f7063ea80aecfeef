/// Reads nodes from a Realm image, checking each against the image before it is used.
///
/// Invariants: (1) every node handed out lies wholly inside the image and starts 8-aligned after the 24-byte
/// header (bytes 0-3 of its header are not looked at: realm-core writes `AAAA` there but never reads it, and
/// arrays that older releases moved or upgraded carry their capacity there instead); (2) recursion through the file's trees is bounded by
/// ``maxDepth``, so a ref that points back at an ancestor ends in an error, not a hang; (3) the bytes read over the
/// reader's life are bounded by ``workBudget`` (a multiple of the image), so a file whose nodes are shared many
/// times over (a DAG where a tree is expected) ends in an error rather than exponential work.
final class RealmFileReader {
    static let maxDepth = 64
    let image: any RealmImage
    let path: String
    let formatVersion: Int
    private(set) var bytesRead = 0
    let workBudget: Int

    init(image: any RealmImage, path: String, formatVersion: Int) {
        self.image = image
        self.path = path
        self.formatVersion = formatVersion
        // Reading a file touches each node about once; repeated lookups of embedded objects re-read leaves.
        self.workBudget = 64 * image.count + (64 << 20)
    }

    func corrupted(_ message: String, at offset: Int?) -> RealmFileError {
        RealmFileError(.corrupted, message, file: path, offset: offset)
    }

    /// The node at `ref`; `what` names it for the error message ("the spec of class_Person").
    func node(at ref: Int, _ what: @autoclosure () -> String) throws -> RealmNode {
        guard ref >= 24, ref % 8 == 0, ref <= image.count - RealmNode.headerBytes else {
            throw corrupted("\(what()): ref \(ref) is not an 8-aligned offset inside the file (\(image.count) bytes)", at: ref)
        }
        let header = try image.bytes(at: ref, length: RealmNode.headerBytes)
        let flags = header[4]
        guard let widthType = RealmNode.WidthType(rawValue: (flags >> 3) & 3) else {
            throw corrupted("\(what()): node at ref \(ref) has width type 3, which realm-core never writes", at: ref)
        }
        let width = (1 << Int(flags & 7)) >> 1
        let count = Int(header[5]) << 16 | Int(header[6]) << 8 | Int(header[7])
        let payloadBytes = RealmNode.payloadBytes(widthType: widthType, width: width, count: count)
        guard payloadBytes <= image.count - ref - RealmNode.headerBytes else {
            throw corrupted("\(what()): node at ref \(ref) declares \(count) elements (\(payloadBytes) bytes), past the end of the file", at: ref)
        }
        bytesRead += RealmNode.headerBytes + payloadBytes
        guard bytesRead <= workBudget else {
            throw corrupted("\(what()): reading the file took more than \(workBudget) bytes of node reads for a \(image.count)-byte file: its trees share or repeat nodes", at: ref)
        }
        let payload = try image.bytes(at: ref + RealmNode.headerBytes, length: payloadBytes)
        return RealmNode(
            ref: ref, isInner: flags & 0x80 != 0, hasRefs: flags & 0x40 != 0, context: flags & 0x20 != 0,
            widthType: widthType, width: width, count: count, payload: payload)
    }

    /// The elements of an integer array (width type bits), checked to be one.
    func ints(_ node: RealmNode, _ what: @autoclosure () -> String) throws -> [Int64] {
        guard node.holdsIntegers else {
            throw corrupted("\(what()): an integer array with width type \(node.widthType)", at: node.ref)
        }
        return node.ints
    }

    /// The ref at `index` of a has-refs node (nil for 0 or a tagged value).
    func ref(_ node: RealmNode, _ index: Int, _ what: @autoclosure () -> String) throws -> Int? {
        guard node.holdsIntegers else {
            throw corrupted("\(what()): an array of refs with width type \(node.widthType)", at: node.ref)
        }
        guard index < node.count else {
            throw corrupted("\(what()): node at ref \(node.ref) has \(node.count) elements, needed element \(index)", at: node.ref)
        }
        let raw = node.int(index)
        if raw == 0 || raw & 1 == 1 { return nil }
        guard raw > 0, raw < Int64(image.count) else {
            throw corrupted("\(what()): element \(index) of the node at ref \(node.ref) is ref \(raw), outside the file", at: node.ref)
        }
        return Int(raw)
    }

    /// The tagged integer at `index` of a has-refs node.
    func tagged(_ node: RealmNode, _ index: Int, _ what: @autoclosure () -> String) throws -> Int64 {
        guard node.holdsIntegers, index < node.count, let value = node.tagged(index) else {
            throw corrupted("\(what()): element \(index) of the node at ref \(node.ref) is not a tagged integer", at: node.ref)
        }
        return value
    }

    /// Checks that a tree is not deeper than any file realm-core writes (and that a ref cycle ends).
    func checkDepth(_ depth: Int, _ what: @autoclosure () -> String, at ref: Int) throws {
        guard depth <= Self.maxDepth else {
            throw corrupted("\(what()): nodes nest more than \(Self.maxDepth) deep (a ref that loops back?)", at: ref)
        }
    }
}

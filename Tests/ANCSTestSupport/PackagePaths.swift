import Foundation

/// Where the package and the files beside it are, found from this source file.
public enum PackagePaths {
    /// The package root: Tests/ANCSTestSupport/PackagePaths.swift → up three levels.
    public static let root = URL(fileURLWithPath: #filePath)
        .deletingLastPathComponent()  // ANCSTestSupport
        .deletingLastPathComponent()  // Tests
        .deletingLastPathComponent()

    /// A file or folder under the package root.
    public static func path(_ relative: String) -> String {
        root.appendingPathComponent(relative).path
    }

    /// `../shared` beside the package: the specification, vectors and workloads.
    public static let shared = root.deletingLastPathComponent().appendingPathComponent("shared")

    /// `../shared/vectors/conformance.json`.
    public static let conformanceVectors = shared.appendingPathComponent("vectors/conformance.json")
}

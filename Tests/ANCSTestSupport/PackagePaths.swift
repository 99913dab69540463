import Foundation

/// Where the package and its test data are, found from this source file.
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

    /// `Tests/Vectors/conformance.json`: the conformance vectors.
    public static let conformanceVectors = root.appendingPathComponent("Tests/Vectors/conformance.json")

    /// `Tests/Vectors/media.json`: the AMS and CTS vectors.
    public static let mediaVectors = root.appendingPathComponent("Tests/Vectors/media.json")
}

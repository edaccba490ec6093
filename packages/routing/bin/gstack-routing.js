#!/usr/bin/env node
// The gstack-routing command. A file of its own, not the built one, so that the link a package
// manager makes to it exists before the package is built.
import "../dist/cli.js";

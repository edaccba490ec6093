#!/usr/bin/env node
// The gstack-routing command, bundled so this one package installs it without the registry.
import "../bundle-dependencies";
import "../../../routing/src/cli";

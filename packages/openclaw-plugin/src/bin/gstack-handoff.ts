#!/usr/bin/env node
// The gstack-handoff command, bundled so this one package installs it without the registry.
import "../bundle-dependencies";
import "../../../handoff/src/cli";

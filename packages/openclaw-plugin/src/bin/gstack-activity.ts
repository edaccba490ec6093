#!/usr/bin/env node
// The gstack-activity command, bundled so this one package installs it without the registry.
import "../bundle-dependencies";
import "../../../activity/src/cli";

#!/usr/bin/env node
// The gstack-dispatch command, bundled so this one package installs it without the registry.
import "../bundle-dependencies";
import "../../../../apps/daemon/src/cli";

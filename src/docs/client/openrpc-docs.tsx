// Browser entry of the interface A documentation page; bundled by scripts/build-docs.ts.
import React from 'react';
import { createRoot } from 'react-dom/client';
import { Documentation } from '@open-rpc/docs-react';

async function render(): Promise<void> {
  const container = document.getElementById('openrpc-docs')!;
  const response = await fetch(container.dataset.spec!);
  createRoot(container).render(<Documentation schema={await response.json()} uiSchema={{ params: { 'ui:defaultExpanded': true } }} />);
}

void render();

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { I18nProvider, startingTranslator } from './i18n/react.js';
import './styles/base.css';
import './styles/chat.css';
import './styles/panels.css';
import './styles/qol.css';
// The dialogs' and fields' look, shared with the settings pages (the chat's rename/delete dialogs use them too).
import './settings/settings.css';

const root = document.getElementById('root');
if (root) {
  // The first render is already in the reader's language (its messages are loaded before it).
  const initial = await startingTranslator();
  createRoot(root).render(
    <StrictMode>
      <I18nProvider initial={initial}>
        <App />
      </I18nProvider>
    </StrictMode>,
  );
}

import { StrictMode } from 'react';
import { createRoot } from 'react-dom/client';
import { App } from './App.js';
import { I18nProvider, startingTranslator } from './i18n/react.js';
import './styles/base.css';
import './styles/chat.css';
import './styles/panels.css';

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
